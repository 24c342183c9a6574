package yarns

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	commands["write-wheel"] = cmdWriteWheel
	commands["wait-log"] = cmdWaitLog
}

// cmdWriteWheel writes a pure-Python wheel, which pip installs with no
// package index and no build step.
func cmdWriteWheel(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "write-wheel")
	if len(args) != 4 {
		ts.Fatalf("usage: write-wheel DIR DIST VERSION SRC")
	}
	dir, dist, version, src := ts.MkAbs(args[0]), args[1], args[2], ts.MkAbs(args[3])
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(writeWheel(filepath.Join(dir, dist+"-"+version+"-py3-none-any.whl"), dist, version, src))
}

func writeWheel(name, dist, version, src string) error {
	info := dist + "-" + version + ".dist-info"
	files := map[string][]byte{
		info + "/METADATA": []byte("Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\n"),
		info + "/WHEEL":    []byte("Wheel-Version: 1.0\nGenerator: yarns\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	z := zip.NewWriter(f)
	var record strings.Builder
	for n, data := range files {
		w, err := z.Create(n)
		if err != nil {
			return err
		}
		w.Write(data)
		sum := sha256.Sum256(data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(data))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, err := z.Create(info + "/RECORD")
	if err != nil {
		return err
	}
	w.Write([]byte(record.String()))
	return z.Close()
}

// cmdWaitLog waits for a line in the log of a process of the script.
func cmdWaitLog(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "wait-log")
	if len(args) != 2 {
		ts.Fatalf("usage: wait-log NAME REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	name := filepath.Join(state(ts).work, args[0]+".log")
	deadline := time.Now().Add(waitLimit)
	for {
		data, _ := os.ReadFile(name)
		if re.Match(data) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not match %q within %v", name, args[1], waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
