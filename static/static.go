// Package static holds what the web pages load besides themselves: the
// style sheet and the script. They are embedded so that the WEBAPP binary
// carries them, and the on-disk status page can have them inline.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

//go:embed style.css app.js
var Files embed.FS

// Read returns the embedded file name; it panics on a name that is not
// embedded, which only a typo in the program can cause.
func Read(name string) []byte {
	b, err := fs.ReadFile(Files, name)
	if err != nil {
		panic(err)
	}
	return b
}

// Version changes whenever a file does. Pages ask for the files with it,
// so a browser may cache them for good and still never keeps an old one.
var Version = func() string {
	h := sha256.New()
	for _, name := range []string{"style.css", "app.js"} {
		h.Write(Read(name))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()
