package dashboards

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// installHint is how to get the Prometheus binaries the tests below need.
const installHint = "install Prometheus to run it: apt-get install prometheus (Debian/Ubuntu; CI's .ci/run does this), " +
	"or put prometheus and promtool from https://prometheus.io/download/ on PATH"

// lookPath returns the path of a Prometheus binary or skips the test with the install hint.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := lookPathErr(name)
	if err != nil {
		t.Skip(err)
	}
	return p
}

func lookPathErr(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH: %s", name, installHint)
	}
	return p, nil
}

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin := lookPath(t, "promtool")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRulesPromtool checks the rule files and runs their promtool unit tests
// (rules/*_test.yaml).
func TestRulesPromtool(t *testing.T) {
	rules, err := filepath.Glob(filepath.Join("rules", "*.rules.yaml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule files in rules/: %v", err)
	}
	tests, err := filepath.Glob(filepath.Join("rules", "*_test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool tests in rules/: %v", err)
	}
	promtool(t, append([]string{"check", "rules"}, rules...)...)
	out := promtool(t, append([]string{"test", "rules"}, tests...)...)
	if strings.Count(out, "SUCCESS") != len(tests) {
		t.Fatalf("promtool test rules: want %d successes:\n%s", len(tests), out)
	}
}

// TestRuleFilesAreTested checks that every alert has at least one promtool test case and every
// recording rule is evaluated by one, so a new rule cannot ship untested.
func TestRuleFilesAreTested(t *testing.T) {
	files, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	tested := ""
	tests, _ := filepath.Glob(filepath.Join("rules", "*_test.yaml"))
	for _, p := range tests {
		var tf struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string `json:"alertname"`
				} `json:"alert_rule_test"`
				PromQLExprTest []struct {
					Expr string `json:"expr"`
				} `json:"promql_expr_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(mustRead(t, p), &tf); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tc := range tf.Tests {
			for _, a := range tc.AlertRuleTest {
				tested += " alert:" + a.Alertname + " "
			}
			for _, e := range tc.PromQLExprTest {
				tested += " " + e.Expr + " "
			}
		}
	}
	rules := 0
	for _, f := range files {
		var rf struct {
			Groups []struct {
				Rules []struct {
					Record string `json:"record"`
					Alert  string `json:"alert"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(f.Data, &rf); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				rules++
				switch {
				case r.Alert != "" && !strings.Contains(tested, " alert:"+r.Alert+" "):
					t.Errorf("%s: alert %s has no alert_rule_test in rules/*_test.yaml", f.Name, r.Alert)
				case r.Record != "" && !strings.Contains(tested, r.Record) && !usedByAlert(files, r.Record):
					t.Errorf("%s: recording rule %s is neither tested nor used by an alert", f.Name, r.Record)
				}
			}
		}
	}
	if rules == 0 {
		t.Fatal("no rules found")
	}
}

func usedByAlert(files []RuleFile, record string) bool {
	for _, f := range files {
		if strings.Contains(f.Name, "alert") && strings.Contains(string(f.Data), record) {
			return true
		}
	}
	return false
}
