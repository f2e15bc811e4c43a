// Package kubernetes holds the kustomize manifests of a distributed xdslab run (base/ with
// xdslab's own control plane, external/ against another control plane; docs/distributed.md)
// and the test that renders, decodes and dry-run applies them. It has no code of its own.
package kubernetes
