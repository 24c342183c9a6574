package browsertest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// axe-core, Deque's accessibility checker (MPL-2.0), runs in the pages.
// It is not kept here: npm fetches the version named, once, into the
// user's cache, and its script is checked against the digest below
// whenever it is read.
const (
	axeVersion = "4.10.3"
	// axeSHA256 is the digest of package/axe.min.js of that version.
	axeSHA256 = "880970c081707360e64f34cea25ff91892f5bc95675b0776925b9709dd8a68bb"
)

var (
	axeOnce   sync.Once
	axeScript string
	axeErr    error
)

// axeSource is the script of axe-core; the test fails, saying why, if it
// cannot be had.
func axeSource(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() { axeScript, axeErr = loadAxe() })
	if axeErr != nil {
		t.Fatal(axeErr)
	}
	return axeScript
}

func checkAxe(data []byte) error {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != axeSHA256 {
		return fmt.Errorf("axe-core %s's axe.min.js has SHA-256 %s; want %s", axeVersion, got, axeSHA256)
	}
	return nil
}

func loadAxe() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	file := filepath.Join(cache, "lorry-controller", "axe-core-"+axeVersion+".min.js")
	if data, err := os.ReadFile(file); err == nil && checkAxe(data) == nil {
		return string(data), nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("no npm found: the accessibility tests fetch axe-core with it; " +
			"install the Debian package npm (scripts/deps does)")
	}
	dir, err := os.MkdirTemp("", "axe-core-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(npm, "pack", "--silent", "axe-core@"+axeVersion, "--pack-destination", dir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm pack axe-core@%s: %v\n%s", axeVersion, err, out)
	}
	tgz, err := os.ReadFile(filepath.Join(dir, "axe-core-"+axeVersion+".tgz"))
	if err != nil {
		return "", err
	}
	data, err := fileOfTarball(tgz, "package/axe.min.js")
	if err != nil {
		return "", fmt.Errorf("axe-core %s: %w", axeVersion, err)
	}
	if err := checkAxe(data); err != nil {
		return "", err
	}
	// Written beside and renamed: tests that run at once read all of it
	// or none.
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".axe-core-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return "", err
	}
	return string(data), nil
}

// fileOfTarball is the file called name in the gzipped tarball tgz.
func fileOfTarball(tgz []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no %s in the package", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name {
			return io.ReadAll(io.LimitReader(tr, 16<<20))
		}
	}
}

// axeViolation is a rule of axe-core that the page breaks, and where.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// axe runs axe-core in the page as it stands, and fails the test for each
// critical or serious violation.
func (b *tab) axe(where string) {
	b.t.Helper()
	if !eval[bool](b, `typeof window.axe === "object"`) {
		b.do("load axe-core", chromedp.Evaluate[chromedp.Void](axeSource(b.t)))
	}
	found, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]axeViolation](
		`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.filter(v => v.impact === "critical" || v.impact === "serious"))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: run axe-core: %v", where, err)
	}
	for _, v := range found {
		var nodes []string
		for _, n := range v.Nodes {
			nodes = append(nodes, fmt.Sprintf("  %v %.200s\n    %s", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n    ")))
		}
		b.t.Errorf("%s: axe-core finds %s (%s): %s, at %d places:\n%s", where, v.ID, v.Impact, v.Help, len(v.Nodes), strings.Join(nodes, "\n"))
	}
}
