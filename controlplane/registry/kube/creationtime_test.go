package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConvertServiceCreationTime: a Service keeps its creationTimestamp, which orders services
// as istiod orders them (model.Scope.CompareServices: the older takes a shared 0.0.0.0 port).
func TestConvertServiceCreationTime(t *testing.T) {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s := service("ns", "s", corev1.ServicePort{Name: "tcp", Port: 9051})
	s.CreationTimestamp = metav1.NewTime(created)
	if got := ConvertService(s, "s.ns.svc.cluster.local").CreationTime; !got.Equal(created) {
		t.Errorf("CreationTime %v, want %v", got, created)
	}
}
