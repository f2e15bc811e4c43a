package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kubectl returns the kubectl binary, or skips the test with the install hint.
func kubectl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: install Debian's kubernetes-client (apt-get install kubernetes-client); .ci/run does")
	}
	return p
}

// rendered is one overlay's output, decoded strictly into the Kubernetes API types.
type rendered struct {
	raw        []byte
	namespaces []corev1.Namespace
	configMaps map[string]corev1.ConfigMap
	services   []corev1.Service
	pvcs       map[string]corev1.PersistentVolumeClaim
	jobs       map[string]batchv1.Job
}

func render(t *testing.T, bin, dir string) rendered {
	t.Helper()
	out, err := exec.Command(bin, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	r := rendered{raw: out, configMaps: map[string]corev1.ConfigMap{}, pvcs: map[string]corev1.PersistentVolumeClaim{}, jobs: map[string]batchv1.Job{}}
	for i, doc := range bytes.Split(out, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: document %d: %v", dir, i, err)
		}
		strict := func(v any) {
			if err := yaml.UnmarshalStrict(doc, v); err != nil {
				t.Errorf("%s: %s document %d does not decode strictly: %v", dir, tm.Kind, i, err)
			}
		}
		switch tm.APIVersion + "/" + tm.Kind {
		case "v1/Namespace":
			var o corev1.Namespace
			strict(&o)
			r.namespaces = append(r.namespaces, o)
		case "v1/ConfigMap":
			var o corev1.ConfigMap
			strict(&o)
			r.configMaps[o.Name] = o
		case "v1/Service":
			var o corev1.Service
			strict(&o)
			r.services = append(r.services, o)
		case "v1/PersistentVolumeClaim":
			var o corev1.PersistentVolumeClaim
			strict(&o)
			r.pvcs[o.Name] = o
		case "batch/v1/Job":
			var o batchv1.Job
			strict(&o)
			r.jobs[o.Name] = o
		default:
			t.Errorf("%s: document %d: unexpected %s %s", dir, i, tm.APIVersion, tm.Kind)
		}
	}
	return r
}

var varRef = regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)

// check states what a run needs of the manifests beyond the schema.
func check(t *testing.T, dir string, r rendered) {
	t.Helper()
	shards, err := strconv.Atoi(r.configMaps["xdslab-run"].Data["shards"])
	if err != nil {
		t.Fatalf("%s: ConfigMap xdslab-run needs data.shards: %v", dir, err)
	}
	fleet, ok := r.jobs["xdslab-fleet"]
	if !ok {
		t.Fatalf("%s: no Job xdslab-fleet", dir)
	}
	if fleet.Spec.CompletionMode == nil || *fleet.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: xdslab-fleet must be an Indexed Job (JOB_COMPLETION_INDEX picks the shard)", dir)
	}
	if fleet.Spec.Completions == nil || fleet.Spec.Parallelism == nil || int(*fleet.Spec.Completions) != shards || int(*fleet.Spec.Parallelism) != shards {
		deref := func(p *int32) any {
			if p == nil {
				return "unset"
			}
			return *p
		}
		t.Errorf("%s: xdslab-fleet completions %v and parallelism %v must equal xdslab-run's shards %d", dir, deref(fleet.Spec.Completions), deref(fleet.Spec.Parallelism), shards)
	}
	// Every process of a run reads the same start, which is also the run's identity: the merge
	// must read it too, or it would merge (and count towards --wait) an earlier run's
	// summaries left on the volume.
	startOf := func(job string) string {
		for _, c := range r.jobs[job].Spec.Template.Spec.Containers {
			for i, a := range c.Args {
				if a == "--start-at-file" && i+1 < len(c.Args) {
					return c.Args[i+1]
				}
			}
		}
		return ""
	}
	if want := startOf("xdslab-fleet"); want == "" || startOf("xdslab-target") != want || startOf("xdslab-merge") != want {
		t.Errorf("%s: --start-at-file of the fleet %q, the simulator %q and the merge %q: give all three the same (the run's start and id)",
			dir, want, startOf("xdslab-target"), startOf("xdslab-merge"))
	}
	for _, name := range []string{"xdslab-target", "xdslab-fleet", "xdslab-merge"} {
		job, ok := r.jobs[name]
		if !ok {
			t.Errorf("%s: no Job %s", dir, name)
			continue
		}
		pod := job.Spec.Template
		if name != "xdslab-merge" && pod.Annotations["prometheus.io/scrape"] != "true" {
			t.Errorf("%s: %s pods carry no Prometheus scrape annotations", dir, name)
		}
		if port := pod.Annotations["prometheus.io/port"]; port != "" {
			found := false
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				for _, p := range c.Ports {
					found = found || strconv.Itoa(int(p.ContainerPort)) == port
				}
			}
			if !found {
				t.Errorf("%s: %s scrapes port %s, which no container exposes", dir, name, port)
			}
		}
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Spec.Volumes {
			vols[v.Name] = v
			if v.ConfigMap != nil {
				if _, ok := r.configMaps[v.ConfigMap.Name]; !ok {
					t.Errorf("%s: %s mounts ConfigMap %s, which is not in the manifests", dir, name, v.ConfigMap.Name)
				}
			}
			if v.PersistentVolumeClaim != nil {
				if _, ok := r.pvcs[v.PersistentVolumeClaim.ClaimName]; !ok {
					t.Errorf("%s: %s claims %s, which is not in the manifests", dir, name, v.PersistentVolumeClaim.ClaimName)
				}
			}
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if !strings.Contains(c.Image, "xdslab") {
				t.Errorf("%s: %s/%s image %q", dir, name, c.Name, c.Image)
			}
			env := map[string]bool{}
			if name == "xdslab-fleet" {
				env["JOB_COMPLETION_INDEX"] = true // set by the Job controller in Indexed Jobs
			}
			for _, e := range c.Env {
				env[e.Name] = true
				if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
					cm, ok := r.configMaps[ref.ConfigMapKeyRef.Name]
					if _, has := cm.Data[ref.ConfigMapKeyRef.Key]; !ok || !has {
						t.Errorf("%s: %s/%s env %s reads %s/%s, which does not exist", dir, name, c.Name, e.Name, ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key)
					}
				}
			}
			for _, a := range c.Args {
				for _, m := range varRef.FindAllStringSubmatch(a, -1) {
					if !env[m[1]] {
						t.Errorf("%s: %s/%s argument %q uses $(%s), which its env does not define (Kubernetes would pass it literally)", dir, name, c.Name, a, m[1])
					}
				}
			}
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok {
					t.Errorf("%s: %s/%s mounts volume %s, which the pod does not define", dir, name, c.Name, m.Name)
				}
			}
		}
	}
	for _, s := range r.services {
		matched := false
		for _, j := range r.jobs {
			ok := len(s.Spec.Selector) > 0
			for k, v := range s.Spec.Selector {
				ok = ok && j.Spec.Template.Labels[k] == v
			}
			matched = matched || ok
		}
		if !matched {
			t.Errorf("%s: Service %s selects no pod template", dir, s.Name)
		}
	}
}

// discovery is a loopback stand-in for an API server's discovery endpoints (the groups and
// resources the manifests use); every object read answers 404, so a client-side dry run
// "creates" everything.
func discovery(t *testing.T) *httptest.Server {
	t.Helper()
	res := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, SingularName: strings.ToLower(kind), Namespaced: namespaced, Kind: kind,
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}}
	}
	lists := map[string]any{
		"/api": metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1"}}},
		"/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{
			Name: "batch", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "batch/v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "batch/v1", Version: "v1"}}}},
		"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{res("namespaces", "Namespace", false), res("configmaps", "ConfigMap", true),
				res("services", "Service", true), res("persistentvolumeclaims", "PersistentVolumeClaim", true)}},
		"/apis/batch/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "batch/v1",
			APIResources: []metav1.APIResource{res("jobs", "Job", true)}},
		"/version": map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if v, ok := lists[r.URL.Path]; ok && r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(v)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: r.URL.Path + " not found"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestManifests renders every overlay with kubectl kustomize, decodes each object strictly
// into the Kubernetes API types, checks what a run needs (shard count, env and volume
// references, scrape annotations, selectors) and applies them with kubectl apply
// --dry-run=client against a loopback discovery stand-in.
func TestManifests(t *testing.T) {
	bin := kubectl(t)
	srv := discovery(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: standin, cluster: {server: %q}}]
users: [{name: u, user: {token: test}}]
contexts: [{name: c, context: {cluster: standin, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"base", "external"} {
		t.Run(dir, func(t *testing.T) {
			r := render(t, bin, dir)
			if len(r.namespaces) != 1 || len(r.jobs) != 3 {
				t.Errorf("%d namespaces and %d jobs, want 1 and 3", len(r.namespaces), len(r.jobs))
			}
			check(t, dir, r)
			cmd := exec.Command(bin, "apply", "--dry-run=client", "--validate=false", "--kubeconfig", kubeconfig, "-f", "-")
			cmd.Stdin = bytes.NewReader(r.raw)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no cached discovery from elsewhere
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=client: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "(dry run)"); n != 8 {
				t.Errorf("kubectl applied %d objects, want 8:\n%s", n, out)
			}
		})
	}
	t.Run("external has no control plane", func(t *testing.T) {
		r := render(t, bin, "external")
		pod := r.jobs["xdslab-target"].Spec.Template.Spec
		if len(pod.InitContainers) != 0 || !strings.Contains(strings.Join(pod.Containers[0].Args, " "), "--sink kube") {
			t.Errorf("external target pod: init containers %d, sim args %v", len(pod.InitContainers), pod.Containers[0].Args)
		}
	})
}
