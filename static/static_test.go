package static

import (
	"regexp"
	"testing"
)

// TestNothingFromElsewhere keeps the pages self-contained: no fonts,
// style sheets, scripts or images from another server, which a WEBAPP on
// a closed network could not reach and which would see every admin's
// visits.
func TestNothingFromElsewhere(t *testing.T) {
	external := regexp.MustCompile(`(?i)https?:|@import|url\(|//[a-z0-9-]+\.[a-z]`)
	for _, name := range []string{"style.css", "app.js"} {
		if m := external.FindString(string(Read(name))); m != "" {
			t.Errorf("%s refers to something elsewhere: %q", name, m)
		}
	}
}

func TestVersionFollowsTheFiles(t *testing.T) {
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(Version) {
		t.Errorf("Version = %q; want 12 hex digits", Version)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Read of a file that is not embedded did not panic")
		}
	}()
	Read("static.go")
}
