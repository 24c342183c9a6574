package yarns

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/gittest"
)

// bigRepo makes a repository of about 30,000 objects (10,000 commits, each
// with a tree and a blob) and 1,000 branches, with git fast-import.
func bigRepo(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "big")
	gittest.Git(b, "", nil, "init", "-q", "-b", "main", dir)
	var in bytes.Buffer
	const commits, branches = 10_000, 1_000
	for i := 1; i <= commits; i++ {
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter Big <big@example.com> %d +0000\ndata 10\ncommit %03d\n", i, 1_700_000_000+i, i%1000)
		if i > 1 {
			fmt.Fprintf(&in, "from :%d\n", i-1)
		}
		content := fmt.Sprintf("line %d\n", i)
		fmt.Fprintf(&in, "M 100644 inline file%d\ndata %d\n%s\n", i%50, len(content), content)
	}
	for i := range branches {
		fmt.Fprintf(&in, "reset refs/heads/branch%04d\nfrom :%d\n\n", i, (i+1)*commits/branches)
	}
	gittest.Git(b, dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Git(b, dir, nil, "repack", "-a", "-d", "-q")
	return dir
}

func timeIt(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// BenchmarkMirrorJob mirrors a repository of 30,000 objects and 1,000
// refs through a real minion job (WEBAPP, minion, lorry, local downstream)
// and compares it with git clone --mirror and git push --mirror of the same
// repository, measured in the same run; then a re-run with nothing new.
func BenchmarkMirrorJob(b *testing.B) {
	for _, bin := range []string{webappBin, minionBin, lorryBin} {
		if err := buildErrs[bin]; err != nil {
			b.Fatal(err)
		}
	}
	src := bigRepo(b)
	var plainTotal, firstTotal, againTotal time.Duration
	n := 0
	// Each iteration measures three rounds: single runs on a shared
	// machine are noisy.
	for b.Loop() {
		for range 3 {
			mirrorRound(b, src, &plainTotal, &firstTotal, &againTotal)
			n++
		}
	}
	report(b, src, n, plainTotal, firstTotal, againTotal)
}

func mirrorRound(b *testing.B, src string, plainTotal, firstTotal, againTotal *time.Duration) {
	work := b.TempDir()

	plain := timeIt(func() {
		// file:// as in the spec: a plain path would let git hard-link
		// the objects instead of transferring them.
		gittest.Git(b, "", nil, "clone", "-q", "--mirror", "file://"+src, filepath.Join(work, "plain.git"))
		gittest.Git(b, "", nil, "init", "-q", "--bare", filepath.Join(work, "plain-down.git"))
		gittest.Git(b, filepath.Join(work, "plain.git"), nil, "push", "-q", "--mirror", filepath.Join(work, "plain-down.git"))
	})

	conf := filepath.Join(work, "confgit")
	gittest.Git(b, "", nil, "init", "-q", "-b", "master", conf)
	os.WriteFile(filepath.Join(conf, "lorry-controller.conf"), []byte(`[{"type": "lorries", "prefix": "bench", "globs": ["*.lorry"], "interval": "1h"}]`), 0o644)
	os.WriteFile(filepath.Join(conf, "big.lorry"), []byte(`{"big": {"type": "git", "url": "file://`+src+`"}}`), 0o644)
	gittest.Git(b, conf, nil, "add", "-A")
	gittest.Git(b, conf, nil, "commit", "-q", "-m", "bench")

	addrFile := filepath.Join(work, "addr")
	webapp := exec.Command(filepath.Join(binDir, webappBin), "--statedb", filepath.Join(work, "state.db"),
		"--configuration-directory", conf, "--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--downstream-host-type", "local", "--local-base-directory", filepath.Join(work, "down"), "--log-level", "warn",
		"--debug-fake-time", "--insecure-no-auth", "--allow-local-sources")
	webapp.Stderr = os.Stderr
	if err := webapp.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { webapp.Process.Kill(); webapp.Wait() }()
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if a, err := os.ReadFile(addrFile); err == nil {
			base = "http://" + strings.TrimSpace(string(a))
		}
	}
	if resp, err := http.PostForm(base+"/1.0/read-configuration", url.Values{}); err != nil || resp.StatusCode != 200 {
		b.Fatalf("read-configuration: %v %v", resp, err)
	}
	jobDone := func(id int) {
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			resp, err := http.Get(fmt.Sprintf("%s/1.0/job/%d", base, id))
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case bytes.Contains(body, []byte(`"status":"succeeded"`)):
				return
			case resp.StatusCode == 200 && !bytes.Contains(body, []byte(`"status":"running"`)) &&
				!bytes.Contains(body, []byte(`"status":"claimed"`)):
				b.Fatalf("job %d: %s", id, body)
			}
		}
		b.Fatalf("job %d did not finish", id)
	}
	minion := exec.Command(filepath.Join(binDir, minionBin), "--webapp-url", base, "--name", "bench",
		"--sleep", "10ms", "--update-interval", "1s", "--working-area", filepath.Join(work, "area"),
		"--lorry-cmd", filepath.Join(binDir, lorryBin))
	first := timeIt(func() {
		if err := minion.Start(); err != nil {
			b.Fatal(err)
		}
		jobDone(1)
	})
	defer func() { minion.Process.Kill(); minion.Wait() }()
	// The re-run: move the fake clock past the lorry's interval, then
	// time until the job's end.
	again := timeIt(func() {
		resp, err := http.PostForm(base+"/1.0/pretend-time", url.Values{"now": {"3600"}})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("pretend-time: %v %v", resp, err)
		}
		resp.Body.Close()
		jobDone(2)
	})
	down := filepath.Join(work, "down", "bench", "big.git")
	if got, want := gittest.Git(b, down, nil, "for-each-ref", "--count=2000", "--format=%(refname)"), gittest.Git(b, src, nil, "for-each-ref", "--format=%(refname)"); got != want {
		b.Fatalf("downstream refs differ from upstream")
	}
	*plainTotal += plain
	*firstTotal += first
	*againTotal += again
}

func report(b *testing.B, src string, n int, plainTotal, firstTotal, againTotal time.Duration) {
	plain, first, again := plainTotal/time.Duration(n), firstTotal/time.Duration(n), againTotal/time.Duration(n)
	objects := gittest.Git(b, src, nil, "count-objects", "-v")
	b.ReportMetric(plain.Seconds(), "git-mirror-s")
	b.ReportMetric(first.Seconds(), "first-job-s")
	b.ReportMetric(first.Seconds()/plain.Seconds(), "ratio")
	b.ReportMetric(again.Seconds(), "rerun-job-s")
	b.Logf("upstream: 1,001 refs, %s", strings.ReplaceAll(strings.Split(objects, "\n")[2], "in-pack: ", "objects in pack: "))
	b.Logf("mean of %d runs: git clone --mirror + push --mirror %v; first mirror job %v (%.2fx); re-run with nothing new %v (from pretend-time to the job's end)",
		n, plain.Round(time.Millisecond), first.Round(time.Millisecond), first.Seconds()/plain.Seconds(), again.Round(time.Millisecond))
}
