package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestTinySimulation runs the whole simulation at a tiny scale, the
// WEBAPP built from this module, so that it keeps working.
func TestTinySimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the WEBAPP")
	}
	cache := t.TempDir()
	o, err := parseFlags([]string{"--lorries", "2000", "--minions", "10", "--duration", "4s", "--idle", "1s",
		"--rest", "0s", "--cache", cache, "--work", filepath.Join(t.TempDir(), "work")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := run(context.Background(), o, &out, &progress); err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	t.Logf("%s", out.String())
	for _, want := range []string{
		`read-configuration: first \S+, unchanged \S+, one file changed \S+`,
		`WEBAPP memory: peak [0-9]+ MiB`,
		`job-update: [0-9]+ answers`,
		`WEBAPP CPU: `,
		`database size: [0-9]+ MiB`,
		`GET /1.0/status-html: \S+ ms \(200, \d+ bytes; median of [1-5], `,
		`GET /1.0/list-queue: \S+ ms \(200,`,
		`GET /1.0/lorry-html/s00/f000000-0: \S+ ms \(200,`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("report has no line like %q", want)
		}
	}
	m := regexp.MustCompile(`give-me-job: ([0-9]+) answers, .* ([0-9]+) failed`).FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatalf("report has no give-me-job line")
	}
	if n, _ := strconv.Atoi(string(m[1])); n == 0 {
		t.Errorf("no give-me-job answered")
	}

	// A second run reuses the CONFGIT.
	progress.Reset()
	o.duration = time.Second
	o.drive.Minions = 1
	if err := run(context.Background(), o, io.Discard, &progress); err != nil {
		t.Fatalf("second run: %v\n%s", err, progress.String())
	}
	if !bytes.Contains(progress.Bytes(), []byte("reusing CONFGIT")) {
		t.Errorf("the second run did not reuse the CONFGIT:\n%s", progress.String())
	}
}
