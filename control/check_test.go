package control

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"lorrycontroller.dev/lc/confgit"
)

// Every host section that no lister could list is named, with its place
// in the file.
func TestCheckSections(t *testing.T) {
	conf := `[
	  {"type": "gitea", "host": "good.example", "org": "o"},
	  {"type": "trove", "host": "bad%zz", "protocol": "https"},
	  {"type": "lorries", "prefix": "p", "globs": ["*.lorry"]},
	  {"type": "gitea", "host": "also%zz", "org": "o"}
	]`
	cfg, err := confgit.Parse(fstest.MapFS{confgit.ConfFile: &fstest.MapFile{Data: []byte(conf)}})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	err = CheckSections(cfg, CheckHostSection)
	if !errors.Is(err, confgit.ErrBadConf) {
		t.Fatalf("CheckSections = %v; want a broken configuration", err)
	}
	for _, want := range []string{`host "bad%zz": lorry-controller.conf: section [1] (trove): key "host"`, `host "also%zz": lorry-controller.conf: section [3] (gitea): key "api-url"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSections = %q; want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "good.example") {
		t.Errorf("CheckSections = %q; want nothing about the good host", err)
	}
	if err := CheckSections(cfg, nil); err != nil {
		t.Errorf("CheckSections with no check = %v; want nil", err)
	}
}
