package venv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// backend is an in-tree PEP 517 build backend, so that a project installs
// with no package index: it packs scraper/ into a wheel that requires
// greet.
const backend = `import base64, hashlib, os, zipfile

NAME, VERSION = "scraper", "0.1"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = NAME + "-" + VERSION + ".dist-info"
    files = {
        "scraper/__init__.py": open("scraper/__init__.py", "rb").read(),
        info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nRequires-Dist: greet\n" % (NAME, VERSION)).encode(),
        info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    name = NAME + "-" + VERSION + "-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return name
`

var projectSource = map[string]string{
	"requirements.txt":    "greet==1.0\n",
	"pyproject.toml":      "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
	"backend.py":          backend,
	"scraper/__init__.py": "import greet\n\ndef main():\n    return greet.hello + ' from the scraper'\n",
}

func wheels(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeWheel(t, dir, "greet", "1.0", "greet", "hello = 'hello'\n")
	return dir
}

// A real python3 makes the environment and pip installs the requirements
// and the project from local wheels.
func TestBuildWithPython(t *testing.T) {
	needVenv(t)
	c := newCache(t, t.TempDir(), "--no-index", "--find-links", wheels(t))
	rt := Runtime{Name: "news", ID: id1, Python: "python3"}
	env, err := c.Acquire(context.Background(), rt, sourceOf(t, projectSource))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	if !env.Built {
		t.Error("Built = false; want true")
	}
	// Outside the source, so that the import is of what pip installed.
	cmd := exec.Command(env.Python(), "-c", "import scraper; print(scraper.main())")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello from the scraper" {
		t.Errorf("the environment's python said %q, %v; want the project and its requirement installed", out, err)
	}
	if !ready(env.Dir) {
		t.Error("no READY")
	}
}

// A python named through a wrapper that does more around "-m pip install",
// as pyenv's shim does (its rehash, which fails when two builds finish at
// once), builds all the same: the environment's pip is run by the
// interpreter itself, never through the wrapper.
func TestBuildThroughAWrapper(t *testing.T) {
	needVenv(t)
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\n" +
		"case \" $* \" in *' -m pip '*install*) \"" + strings.TrimSpace(string(out)) + "\" \"$@\"; echo 'cannot rehash' >&2; exit 1;; esac\n" +
		"exec \"" + strings.TrimSpace(string(out)) + "\" \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, t.TempDir(), "--no-index", "--find-links", wheels(t))
	env, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: wrapper}, sourceOf(t, projectSource))
	if err != nil {
		t.Fatal(err)
	}
	env.Release()
}

// A requirement that cannot be found fails the build with pip's reason and
// leaves nothing behind.
func TestMissingRequirement(t *testing.T) {
	needVenv(t)
	dir := t.TempDir()
	c := newCache(t, dir, "--no-index", "--find-links", wheels(t))
	_, err := c.Acquire(context.Background(), Runtime{Name: "news", ID: id1, Python: "python3"},
		sourceOf(t, map[string]string{"requirements.txt": "greet==1.0\nnosuch==2.0\n"}))
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "pip install" || !strings.Contains(be.Output, "nosuch") {
		t.Fatalf("Acquire = %v; want a BuildError of pip install naming nosuch", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "news", "111111111111", id1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed build left its directory (%v)", err)
	}
}
