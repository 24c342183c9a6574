// Package etc holds the example configuration, the alerting rules and the
// dashboard that make install puts in place; its tests check the rules
// with promtool and the dashboard's structure.
package etc

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "prometheus/lorry-controller-rules.yml"
	rulesTestFile = "prometheus/lorry-controller-rules.test.yml"
	dashboardFile = "grafana/lorry-controller.json"
	operationsDoc = "../docs/operations.md"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, rulesFile, &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return out
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is needed to check the alerting rules: install prometheus (make deps does)")
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRulesWithPromtool has Prometheus's own tool check the rules and run
// their tests: for each alert, series that fire it and series that do
// not.
func TestRulesWithPromtool(t *testing.T) {
	promtool(t, "check", "rules", "lorry-controller-rules.yml")
	promtool(t, "test", "rules", "lorry-controller-rules.test.yml")
}

// TestEveryAlertIsTested checks that the rules' tests make every alert
// fire somewhere, beside series that do not fire it.
func TestEveryAlertIsTested(t *testing.T) {
	var f struct {
		Tests []struct {
			Name        string `yaml:"name"`
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
			AlertRuleTest []struct {
				Alertname string     `yaml:"alertname"`
				ExpAlerts []expAlert `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, rulesTestFile, &f)
	fires := map[string]bool{}
	for _, tc := range f.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) == 0 {
				continue
			}
			fires[at.Alertname] = true
			// promtool compares the alerts exactly, so a series that
			// none of them matches is one that must not fire.
			quiet := false
			for _, s := range tc.InputSeries {
				if !matchesAny(s.Series, at.ExpAlerts) {
					quiet = true
				}
			}
			if !quiet {
				t.Errorf("test %q: %s has no series that must not fire it", tc.Name, at.Alertname)
			}
		}
	}
	for _, r := range readRules(t) {
		if !fires[r.Alert] {
			t.Errorf("alert %s fires in no test of %s", r.Alert, rulesTestFile)
		}
	}
}

type expAlert struct {
	ExpLabels map[string]string `yaml:"exp_labels"`
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// matchesAny says whether the series has the labels of one of the alerts,
// those the rules add aside.
func matchesAny(series string, alerts []expAlert) bool {
	labels := map[string]string{}
	for _, m := range labelPair.FindAllStringSubmatch(series, -1) {
		labels[m[1]] = m[2]
	}
	for _, a := range alerts {
		match := true
		for k, v := range a.ExpLabels {
			if k != "severity" && labels[k] != v {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestRunbooksPointIntoOperations checks that every alert has a summary,
// a severity and a runbook that is a heading of docs/operations.md.
func TestRunbooksPointIntoOperations(t *testing.T) {
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[slug(strings.TrimLeft(h, "#"))] = true
		}
	}
	for _, r := range readRules(t) {
		if r.Annotations["summary"] == "" {
			t.Errorf("alert %s has no summary", r.Alert)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s has severity %q; want critical or warning", r.Alert, s)
		}
		rb := r.Annotations["runbook"]
		anchor, ok := strings.CutPrefix(rb, "docs/operations.md#")
		if !ok || !anchors[anchor] {
			t.Errorf("alert %s has runbook %q; want docs/operations.md#<a heading of it>", r.Alert, rb)
		}
		if anchor != strings.ToLower(r.Alert) {
			t.Errorf("alert %s has runbook %q; want its own heading, #%s", r.Alert, rb, strings.ToLower(r.Alert))
		}
	}
}

// slug is the anchor of a Markdown heading, as the forges make it.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDashboard checks the dashboard's structure: a Prometheus data source
// variable that every query goes through, and the panels the operators
// look for.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q; want both", d.UID, d.Title)
	}
	hasSource := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasSource = true
		}
	}
	if !hasSource {
		t.Errorf("no variable datasource of type datasource for prometheus in %+v", d.Templating.List)
	}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		titles[p.Title] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q has data source %+v; want ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}
	for _, want := range []string{"Jobs by status", "Running jobs", "Oldest due wait by queue", "Minions",
		"Lorries failing", "Host listings", "Notifications", "State database disk", "Request latency"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
}
