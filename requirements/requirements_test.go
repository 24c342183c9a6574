package requirements

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func reader(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}
}

func TestCheckAllows(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{name: "names and versions", files: map[string]string{File: "requests==2.31.0\nlxml>=5,<6\nfoo[bar]~=1.0\n"}},
		{name: "markers", files: map[string]string{File: "tomli; python_version < \"3.11\"\n"}},
		{name: "hash after a requirement", files: map[string]string{File: "requests==2.31.0 --hash=sha256:abc --hash sha256:def\n"}},
		{name: "continued hashes", files: map[string]string{File: "requests==2.31.0 \\\n    --hash=sha256:abc \\\n    --hash=sha256:def\n"}},
		{name: "comments", files: map[string]string{File: "# -r /etc/passwd\nfoo  # -i https://evil\n\n"}},
		{name: "narrowing options", files: map[string]string{File: "--no-index\n--only-binary :all:\n--no-binary=foo\n--prefer-binary\n--require-hashes\n--pre\n"}},
		{name: "an included file beside", files: map[string]string{File: "-r more.txt\n-c sub/constraints.txt\n",
			"more.txt": "six\n", "sub/constraints.txt": "-r ../more.txt\nsix<2\n"}},
		{name: "included forms", files: map[string]string{File: "-rmore.txt\n--requirement=more.txt\n--requirement more.txt\n", "more.txt": "six\n"}},
		{name: "an include cycle", files: map[string]string{File: "-r a.txt\n", "a.txt": "-r requirements.txt\n"}},
		{name: "local project", files: map[string]string{File: "-e .\n./vendor/pkg\nwheels/foo-1.0-py3-none-any.whl\n"}},
		{name: "windows line ends and a BOM", files: map[string]string{File: "\ufefffoo\r\nbar\r\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check(reader(tc.files)); err != nil {
				t.Errorf("got %v, want nil", err)
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		wantFile string
		wantLine int
		wantErr  string
	}{
		{name: "token file", files: map[string]string{File: "foo\n-r /etc/lorry-controller/minion.token\n"}, wantLine: 2, wantErr: "absolute"},
		{name: "passwd", files: map[string]string{File: "-r /etc/passwd\n"}, wantErr: "absolute"},
		{name: "long form with =", files: map[string]string{File: "--requirement=/etc/passwd\n"}, wantErr: "absolute"},
		{name: "attached short form", files: map[string]string{File: "-r/etc/passwd\n"}, wantErr: "absolute"},
		{name: "constraint up", files: map[string]string{File: "-c ../../token\n"}, wantErr: "outside"},
		{name: "constraint up from a subdirectory", files: map[string]string{File: "-r sub/a.txt\n", "sub/a.txt": "-c ../../x\n"},
			wantFile: "sub/a.txt", wantErr: "outside"},
		{name: "editable up", files: map[string]string{File: "-e ../other\n"}, wantErr: "outside"},
		{name: "editable vcs", files: map[string]string{File: "-e git+https://example.com/x.git#egg=x\n"}, wantErr: "URL"},
		{name: "home", files: map[string]string{File: "-r ~/.netrc\n"}, wantErr: "home"},
		{name: "continued option", files: map[string]string{File: "-\\\nr /etc/passwd\n"}, wantErr: "absolute"},
		{name: "continued across three lines", files: map[string]string{File: "foo\n--req\\\nuirement \\\n/etc/passwd\n"}, wantLine: 2, wantErr: "absolute"},
		{name: "hidden after a form feed", files: map[string]string{File: "foo\f-r /etc/passwd\n"}, wantLine: 2, wantErr: "absolute"},
		{name: "include of a missing file", files: map[string]string{File: "-r nothing.txt\n"}, wantErr: "not a file"},
		{name: "nested include out", files: map[string]string{File: "-r a.txt\n", "a.txt": "ok\n-r /etc/passwd\n"}, wantFile: "a.txt", wantLine: 2, wantErr: "absolute"},
		{name: "index url", files: map[string]string{File: "--index-url https://evil/simple\n"}, wantErr: `"--index-url" is not allowed`},
		{name: "short index", files: map[string]string{File: "-i https://evil/simple\n"}, wantErr: `"-i" is not allowed`},
		{name: "attached short index", files: map[string]string{File: "-ihttps://evil/simple\n"}, wantErr: `"-i" is not allowed`},
		{name: "extra index", files: map[string]string{File: "--extra-index-url=https://evil/simple\n"}, wantErr: "--extra-index-url"},
		{name: "find links", files: map[string]string{File: "--find-links /srv\n"}, wantErr: "--find-links"},
		{name: "short find links", files: map[string]string{File: "-f /srv\n"}, wantErr: `"-f"`},
		{name: "trusted host", files: map[string]string{File: "--trusted-host evil\n"}, wantErr: "--trusted-host"},
		{name: "abbreviated option", files: map[string]string{File: "--extra evil\n"}, wantErr: `"--extra"`},
		{name: "option after a requirement", files: map[string]string{File: "foo -r /etc/passwd\n"}, wantErr: "after a requirement"},
		{name: "index after a requirement", files: map[string]string{File: "foo --index-url=https://evil\n"}, wantErr: "after a requirement"},
		{name: "url", files: map[string]string{File: "https://evil/x.tar.gz\n"}, wantErr: "URL"},
		{name: "file url", files: map[string]string{File: "file:///etc/passwd\n"}, wantErr: "URL"},
		{name: "direct reference", files: map[string]string{File: "x @ file:///etc/passwd\n"}, wantErr: "direct reference"},
		{name: "direct reference in a marker", files: map[string]string{File: "x; python_version > \"3\" @ file:///etc/passwd\n"}, wantErr: "direct reference"},
		{name: "absolute path", files: map[string]string{File: "/etc/passwd\n"}, wantErr: "absolute"},
		{name: "path up", files: map[string]string{File: "../../x.whl\n"}, wantErr: "outside"},
		{name: "environment variable", files: map[string]string{File: "foo==${HTTPS_PROXY}\n"}, wantErr: "environment"},
		{name: "quotes", files: map[string]string{File: "-r '/etc/passwd'\n"}, wantErr: "quotes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(reader(tc.files))
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want an *Error", err)
			}
			wantFile, wantLine := tc.wantFile, tc.wantLine
			if wantFile == "" {
				wantFile = File
			}
			if wantLine == 0 {
				wantLine = 1
			}
			if re.File != wantFile || re.Line != wantLine || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %q (file %q line %d), want %s line %d saying %q", err, re.File, re.Line, wantFile, wantLine, tc.wantErr)
			}
		})
	}
}

func TestCheckReadError(t *testing.T) {
	boom := errors.New("boom")
	err := Check(func(string) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want the read error", err)
	}
}
