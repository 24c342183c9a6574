package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestOriginalConfigWarns(t *testing.T) {
	conf := writeFile(t, "minion.conf", "[config]\nlog = syslog\nwebapp-host = localhost\nwebapp-timeout = 3600\n")
	var out bytes.Buffer
	cfg, err := parseArgs([]string{"--config", conf}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WebappURL != "http://localhost:12765" {
		t.Errorf("webapp-url = %q; want http://localhost:12765", cfg.WebappURL)
	}
	for _, want := range []string{conf + ":2: log is ignored", conf + ":4: webapp-timeout is ignored"} {
		if !strings.Contains(out.String(), "lorry-controller-minion: warning: "+want) {
			t.Errorf("output %q lacks the warning %q", out.String(), want)
		}
	}
}

// TestInstalledConfigFile checks the minion.conf that make install puts in
// /etc: it is read without a warning, and it shows every flag.
func TestInstalledConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "etc", "minion.conf")
	var out bytes.Buffer
	if _, err := parseArgs([]string{"--config", path}, &out); err != nil || out.Len() > 0 {
		t.Fatalf("parse %s: %v %q", path, err, out.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := regexp.MustCompile(`^#?([a-z][a-z-]*) =`)
	mentioned := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := key.FindStringSubmatch(sc.Text()); m != nil {
			mentioned[m[1]] = true
		}
	}
	var usage bytes.Buffer
	parseArgs([]string{"--help"}, &usage)
	var all []string
	for _, line := range strings.Split(usage.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			all = append(all, strings.Fields(strings.TrimPrefix(line, "  -"))[0])
		}
	}
	if len(all) < 8 {
		t.Fatalf("found only flags %q in --help", all)
	}
	for _, name := range all {
		if name != "config" && !mentioned[name] {
			t.Errorf("%s does not mention %s", path, name)
		}
	}
}
