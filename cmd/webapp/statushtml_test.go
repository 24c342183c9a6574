package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStatusHTMLDirectoryMadeAtStart(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "www", "lc", "status.html")
	w := startWebapp(t, dir, startOpts{args: []string{"--status-html", page}})
	if code := get(t, w.url+"/1.0/status-html"); code != 200 {
		t.Errorf("status-html = %d; want 200", code)
	}
	if _, err := os.Stat(page); err != nil {
		t.Errorf("on-disk copy: %v; want it written into the directory made at start", err)
	}
	w.stop(t)
}

func TestStatusHTMLDirectoryThatCannotBeMade(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(webappBin, "--statedb", statedbOf(t, dir),
		"--configuration-directory", filepath.Join(dir, "confgit"), "--listen", "127.0.0.1:0",
		"--status-html", filepath.Join(file, "www", "status.html"))
	cmd.Env = cleanEnv()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the WEBAPP started with a --status-html directory that cannot be made\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), filepath.Join(file, "www")) {
		t.Errorf("WEBAPP exit %v with output:\n%s\nwant a failure naming %s", err, out, filepath.Join(file, "www"))
	}
}
