package metricsserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "xdslab_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	s, err := Start("127.0.0.1:0", nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if !strings.Contains(string(body), "xdslab_test_total 3") {
		t.Errorf("metrics body lacks the counter:\n%s", body)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start("not an address", nil, reg); err == nil {
		t.Error("a bad address did not fail")
	}
}
