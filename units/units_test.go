// Package units holds the systemd units, sysusers.d and tmpfiles.d files
// that make install puts in place; its tests install everything into a
// temporary DESTDIR, check the tree, and have systemd-analyze verify every
// unit there.
package units

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// prefix is the PREFIX the test installs with: not the default, to show
// that the installed files follow it.
const prefix = "/usr"

// installed is the tree make install makes under DESTDIR, with modes.
var installed = map[string]fs.FileMode{
	"/usr/bin/lorry-controller-webapp":                                           0o755,
	"/usr/bin/lorry-controller-minion":                                           0o755,
	"/usr/bin/lorry":                                                             0o755,
	"/usr/lib/sysusers.d/lorry-controller.conf":                                  0o644,
	"/usr/lib/tmpfiles.d/lorry-controller.conf":                                  0o644,
	"/usr/share/lorry-controller/hooks/post-update":                              0o755,
	"/usr/share/lorry-controller/hooks/pre-receive":                              0o755,
	"/usr/share/doc/lorry-controller/operations.md":                              0o644,
	"/usr/share/doc/lorry-controller/security.md":                                0o644,
	"/usr/share/doc/lorry-controller/prometheus/lorry-controller-rules.yml":      0o644,
	"/usr/share/doc/lorry-controller/prometheus/lorry-controller-rules.test.yml": 0o644,
	"/usr/share/doc/lorry-controller/grafana/lorry-controller.json":              0o644,
	"/etc/lorry-controller/webapp.conf":                                          0o644,
	"/etc/lorry-controller/minion.conf":                                          0o644,
	"/usr/lib/systemd/system/lorry-controller.target":                            0o644,
	"/usr/lib/systemd/system/lorry-controller-webapp.service":                    0o644,
	"/usr/lib/systemd/system/lorry-controller-webapp.socket":                     0o644,
	"/usr/lib/systemd/system/lorry-controller-minion@.service":                   0o644,
	"/usr/lib/systemd/system/lorry-controller-status-html.service":               0o644,
	"/usr/lib/systemd/system/lorry-controller-status-html.timer":                 0o644,
	"/usr/lib/systemd/system/lorry-controller-read-configuration.service":        0o644,
	"/usr/lib/systemd/system/lorry-controller-read-configuration.timer":          0o644,
	"/usr/lib/systemd/system/lorry-controller-ls-troves.service":                 0o644,
	"/usr/lib/systemd/system/lorry-controller-ls-troves.timer":                   0o644,
	"/usr/lib/systemd/system/lorry-controller-remove-ghost-jobs.service":         0o644,
	"/usr/lib/systemd/system/lorry-controller-remove-ghost-jobs.timer":           0o644,
	"/usr/lib/systemd/system/lorry-controller-remove-old-jobs.service":           0o644,
	"/usr/lib/systemd/system/lorry-controller-remove-old-jobs.timer":             0o644,
	"/usr/lib/systemd/system/lorry-controller-minion-gc.service":                 0o644,
	"/usr/lib/systemd/system/lorry-controller-minion-gc.timer":                   0o644,
	"/usr/lib/systemd/system/lorry-controller-backup.service":                    0o644,
	"/usr/lib/systemd/system/lorry-controller-backup.timer":                      0o644,
}

const unitDir = "/usr/lib/systemd/system"

func makeTarget(t *testing.T, destdir, bin, target string) string {
	t.Helper()
	cmd := exec.Command("make", "-C", "..", target, "DESTDIR="+destdir, "PREFIX="+prefix, "BIN="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, out)
	}
	return string(out)
}

// tree lists the files under root, as absolute paths inside it.
func tree(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	got := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		got[strings.TrimPrefix(p, root)] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// directives reads the "Key=value" lines of a unit file, by key.
func directives(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s: %q is no Key=value", path, line)
			continue
		}
		out[k] = append(out[k], v)
	}
	return out
}

func TestInstallAndVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is needed to verify the units: install systemd (.ci/run does)")
	}
	tmp := t.TempDir()
	destdir, bin := filepath.Join(tmp, "root"), filepath.Join(tmp, "bin")
	makeTarget(t, destdir, bin, "install")

	got := tree(t, destdir)
	for p, mode := range installed {
		if m, ok := got[p]; !ok {
			t.Errorf("make install did not make %s", p)
		} else if m != mode {
			t.Errorf("%s has mode %v; want %v", p, m, mode)
		}
	}
	var extra []string
	for p := range got {
		if _, ok := installed[p]; !ok {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		t.Errorf("make install made files the test does not know: %q", extra)
	}

	placeholder := regexp.MustCompile(`@[a-z]+@`)
	var units []string
	for p := range got {
		b, err := os.ReadFile(filepath.Join(destdir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, "/usr/bin/") && placeholder.Match(b) {
			t.Errorf("%s still has a placeholder: %s", p, placeholder.Find(b))
		}
		if strings.HasPrefix(p, unitDir+"/") {
			units = append(units, filepath.Base(p))
		}
	}
	sort.Strings(units)
	// The pre-receive hook finds the checker where it was installed.
	if b, err := os.ReadFile(filepath.Join(destdir, "/usr/share/lorry-controller/hooks/pre-receive")); err != nil ||
		!bytes.Contains(b, []byte(prefix+"/bin/lorry-controller-webapp")) {
		t.Errorf("the installed pre-receive hook does not name %s/bin/lorry-controller-webapp (%v)", prefix, err)
	}

	// Every unit runs an installed program from PREFIX, and every unit of
	// ours that one names is installed.
	ours := regexp.MustCompile(`lorry-controller[-a-z@.]*\.(service|socket|timer|target)`)
	for _, u := range units {
		d := directives(t, filepath.Join(destdir, unitDir, u))
		for _, ex := range d["ExecStart"] {
			prog := strings.Fields(ex)[0]
			if !strings.HasPrefix(prog, prefix+"/bin/") {
				t.Errorf("%s runs %s; want a program of PREFIX %s", u, prog, prefix)
			}
			if info, err := os.Stat(filepath.Join(destdir, prog)); err != nil || info.Mode()&0o111 == 0 {
				t.Errorf("%s runs %s, which is not an installed program", u, prog)
			}
		}
		for _, key := range []string{"Wants", "Requires", "After", "Before", "PartOf", "WantedBy", "Service"} {
			for _, v := range d[key] {
				for _, name := range ours.FindAllString(v, -1) {
					if _, ok := got[unitDir+"/"+name]; !ok {
						t.Errorf("%s: %s=%s names %s, which is not installed", u, key, v, name)
					}
				}
			}
		}
		// A minion's job must not outlive it (see the unit's comment).
		if strings.HasPrefix(u, "lorry-controller-minion@") {
			if got := d["KillMode"]; len(got) != 1 || got[0] != "control-group" {
				t.Errorf("%s: KillMode %q; want control-group", u, got)
			}
		}
		if strings.HasSuffix(u, ".service") && !strings.Contains(u, "@") {
			if d["User"] == nil || d["User"][0] != "lorry-controller" {
				t.Errorf("%s runs as %v; want User=lorry-controller", u, d["User"])
			}
			for _, k := range []string{"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp"} {
				if d[k] == nil {
					t.Errorf("%s lacks %s=", u, k)
				}
			}
		}
	}

	// systemd-analyze verify loads the units from the DESTDIR tree as
	// systemd would, and checks their directives and that the programs
	// they run are there. The systemd units outside our tree, such as
	// multi-user.target, are not: their absence is not an error here.
	args := []string{"verify", "--man=false", "--recursive-errors=no", "--root=" + destdir}
	for _, u := range units {
		args = append(args, strings.Replace(u, "@.", "@1.", 1))
	}
	cmd := exec.Command(analyze, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}

	// Installing again keeps the operator's configuration.
	conf := filepath.Join(destdir, "/etc/lorry-controller/webapp.conf")
	if err := os.WriteFile(conf, []byte("listen = 0.0.0.0:8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	makeTarget(t, destdir, bin, "install")
	if b, _ := os.ReadFile(conf); string(b) != "listen = 0.0.0.0:8080\n" {
		t.Errorf("a second install changed webapp.conf to %q", b)
	}
	if _, err := os.Stat(conf + ".new"); err != nil {
		t.Errorf("a second install left no webapp.conf.new: %v", err)
	}

	makeTarget(t, destdir, bin, "uninstall")
	left := tree(t, destdir)
	want := []string{"/etc/lorry-controller/minion.conf", "/etc/lorry-controller/minion.conf.new",
		"/etc/lorry-controller/webapp.conf", "/etc/lorry-controller/webapp.conf.new"}
	var leftList []string
	for p := range left {
		leftList = append(leftList, p)
	}
	sort.Strings(leftList)
	if strings.Join(leftList, " ") != strings.Join(want, " ") {
		t.Errorf("after make uninstall, left %q; want only the configuration, %q", leftList, want)
	}
}

// TestVerifyCatchesMistakes makes sure the verification above can fail: a
// unit with an unknown directive and one running a missing program fail,
// where the same unit without the mistake passes.
func TestVerifyCatchesMistakes(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is needed to verify the units: install systemd (.ci/run does)")
	}
	root := t.TempDir()
	dir := filepath.Join(root, unitDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "/usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "/usr/bin/ok"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"good.service":    "[Service]\nExecStart=/usr/bin/ok\nProtectSystem=strict\n",
		"typo.service":    "[Service]\nExecStart=/usr/bin/ok\nProtectSytem=strict\n",
		"missing.service": "[Service]\nExecStart=/usr/bin/lorry-controller-nowhere\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(analyze, "verify", "--man=false", "--recursive-errors=no", "--root="+root, name)
		out, err := cmd.CombinedOutput()
		switch {
		case name == "good.service" && (err != nil || len(out) > 0):
			t.Errorf("systemd-analyze verify %s: %v\n%s; want a pass", name, err, out)
		case name != "good.service" && err == nil:
			t.Errorf("systemd-analyze verify passed %s; want it to fail\n%s", name, out)
		}
	}
}

// TestSysusersAndTmpfiles has systemd make the service user and the state
// directory in a scratch root from the files make install puts in place.
func TestSysusersAndTmpfiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("systemd-tmpfiles hands the directories to the service user, which takes root")
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{
		"lorry-controller.sysusers": "/usr/lib/sysusers.d/lorry-controller.conf",
		"lorry-controller.tmpfiles": "/usr/lib/tmpfiles.d/lorry-controller.conf",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"systemd-sysusers", "--root=" + root}, {"systemd-tmpfiles", "--root=" + root, "--create"}} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(root, "/etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	var uid string
	var jobs struct{ uid, gid string }
	for _, line := range strings.Split(string(passwd), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[0] == "lorry-controller-jobs" {
			jobs.uid, jobs.gid = f[2], f[3]
		}
		if len(f) == 7 && f[0] == "lorry-controller" {
			uid = f[2]
			if f[5] != "/var/lib/lorry-controller" || !strings.HasSuffix(f[6], "nologin") {
				t.Errorf("user %q; want home /var/lib/lorry-controller and no login shell", line)
			}
		}
	}
	if uid == "" || uid == "0" {
		t.Fatalf("no unprivileged lorry-controller user in\n%s", passwd)
	}
	if jobs.uid == "" || jobs.uid == "0" || jobs.uid == uid {
		t.Fatalf("no unprivileged lorry-controller-jobs user of its own in\n%s", passwd)
	}
	group, err := os.ReadFile(filepath.Join(root, "/etc/group"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(group), "\nlorry-controller-jobs:x:"+jobs.gid+":lorry-controller\n") {
		t.Errorf("lorry-controller is not a member of the group of lorry-controller-jobs (%s):\n%s", jobs.gid, group)
	}
	for dir, want := range map[string]struct {
		mode     fs.FileMode
		uid, gid string
	}{
		"/var/lib/lorry-controller":         {0o755, uid, ""},
		"/var/lib/lorry-controller/work":    {0o770 | fs.ModeSticky, uid, jobs.gid},
		"/var/lib/lorry-controller/jobs":    {0o700, jobs.uid, jobs.gid},
		"/var/lib/lorry-controller/backups": {0o700, uid, ""},
		"/var/lib/lorry-controller/mirrors": {0o750 | fs.ModeSetgid, uid, jobs.gid},
	} {
		info, err := os.Stat(filepath.Join(root, dir))
		if err != nil {
			t.Errorf("systemd-tmpfiles made no %s: %v", dir, err)
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		mode := info.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid)
		if !info.IsDir() || mode != want.mode || fmt.Sprint(st.Uid) != want.uid || want.gid != "" && fmt.Sprint(st.Gid) != want.gid {
			t.Errorf("%s: mode %v, owner %d:%d; want a directory, %v, owned by %s:%s", dir, mode, st.Uid, st.Gid, want.mode, want.uid, want.gid)
		}
	}
}

// TestTimersAsDocumented: each timer fires as the table of units in
// docs/operations.md says, and the table names every timer.
func TestTimersAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	// What the table says of a timer, and the line of the timer that
	// says the same.
	said := map[string]string{
		"every minute":    "OnUnitActiveSec=1min",
		"every 5 minutes": "OnUnitActiveSec=5min",
		"hourly":          "OnCalendar=hourly",
		"daily":           "OnCalendar=daily",
	}
	when := regexp.MustCompile(`every minute|every 5 minutes|hourly|daily`)
	timers, err := filepath.Glob("*.timer")
	if err != nil || len(timers) == 0 {
		t.Fatalf("no timers: %v", err)
	}
	for _, timer := range timers {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(timer) + "` \\| (.*)$").FindSubmatch(doc)
		if row == nil {
			t.Errorf("docs/operations.md has no row for %s in its table of units", timer)
			continue
		}
		phrase := when.Find(row[1])
		if phrase == nil {
			t.Errorf("docs/operations.md does not say how often %s fires: %s", timer, row[1])
			continue
		}
		unit, err := os.ReadFile(timer)
		if err != nil {
			t.Fatal(err)
		}
		want := said[string(phrase)]
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(want) + "$").Match(unit) {
			t.Errorf("%s: docs/operations.md says %q, so want %s in the unit", timer, phrase, want)
		}
	}
}
