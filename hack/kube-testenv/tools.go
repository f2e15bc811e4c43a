//go:build tools

// Package tools records the kube-apiserver main package so that go mod tidy keeps its imports.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
