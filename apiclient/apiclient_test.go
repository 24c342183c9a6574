package apiclient

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFromTheDocument generates the client again from
// docs/openapi.yaml, as go generate does, and compares it with the one
// committed: the client is the generator's, from the document as it is.
func TestGeneratedFromTheDocument(t *testing.T) {
	out := filepath.Join(t.TempDir(), "apiclient.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, "../docs/openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("apiclient.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("apiclient.gen.go (%d bytes) is not what oapi-codegen makes of docs/openapi.yaml (%d bytes); run go generate ./apiclient",
			len(got), len(want))
	}
}
