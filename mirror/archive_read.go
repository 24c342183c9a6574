package mirror

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ulikunitz/xz"
)

// Git modes of the files in an imported tree: anything else an archive
// holds is brought to one of these, so that the same archive gives the
// same tree whatever umask or owner it was made with.
const (
	modeFile       = "100644"
	modeExecutable = "100755"
	modeSymlink    = "120000"
)

// importStep is how often an import says how far it has got.
const importStep = 32 << 20

// maxSymlink bounds the target read for a symbolic link stored in a zip,
// where it is the entry's content.
const maxSymlink = 4096

// maxNotes bounds the skipped entries named one by one in the output.
const maxNotes = 20

// treeFile is a file of the tree being imported.
type treeFile struct {
	mode string
	mark int // the blob's mark in the fast-import stream
}

// treeBuilder sends an archive's files to fast-import as blobs as they are
// read, keeping only their names and marks, so that no file is ever held
// in memory whatever its size.
type treeBuilder struct {
	fi     *fastImport
	out    io.Writer
	files  map[string]treeFile
	dirs   map[string]bool // every directory a file was put in
	newest int64           // the newest modification time, in Unix seconds
	prog   *progress
	notes  int
}

func newTreeBuilder(fi *fastImport, out io.Writer) *treeBuilder {
	return &treeBuilder{fi: fi, out: out, files: map[string]treeFile{}, dirs: map[string]bool{},
		prog: &progress{out: out, verb: "imported", step: importStep}}
}

// add streams size bytes of r as the file name. A later entry of the same
// name replaces an earlier one, as when the archive is unpacked.
func (t *treeBuilder) add(name, mode string, size int64, r io.Reader, mtime time.Time) error {
	mark, err := t.fi.blob(size, io.TeeReader(r, t.prog))
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	t.put(name, treeFile{mode: mode, mark: mark}, mtime)
	return nil
}

// put makes name the file f. As when the archive is unpacked, a file
// replaces a directory of the same name with all it holds, and a file
// in a directory replaces a file named as the directory.
func (t *treeBuilder) put(name string, f treeFile, mtime time.Time) {
	if t.dirs[name] {
		prefix := name + "/"
		for p := range t.files {
			if strings.HasPrefix(p, prefix) {
				delete(t.files, p)
			}
		}
	}
	for i := range len(name) {
		if name[i] == '/' {
			delete(t.files, name[:i])
			t.dirs[name[:i]] = true
		}
	}
	t.files[name] = f
	if !mtime.IsZero() && mtime.Unix() > t.newest {
		t.newest = mtime.Unix()
	}
}

// note says in the output that an entry was left out, naming the first
// few.
func (t *treeBuilder) note(format string, args ...any) {
	t.notes++
	if t.notes <= maxNotes {
		fmt.Fprintf(t.out, "skipping "+format+"\n", args...)
	}
}

func (t *treeBuilder) finish() {
	if t.notes > maxNotes {
		fmt.Fprintf(t.out, "skipped %d more entries\n", t.notes-maxNotes)
	}
	if t.prog.done >= importStep {
		files := "files"
		if len(t.files) == 1 {
			files = "file"
		}
		fmt.Fprintf(t.out, "imported %s in %d %s\n", mib(t.prog.done), len(t.files), files)
	}
}

// treePath returns where an archive entry named name lands in the tree
// once strip leading components are dropped: "" when nothing is left of
// it, an error when the name is absolute, climbs out with "..", or would
// land in a .git directory. Archives are made by anyone; unpacking a
// hostile one elsewhere must not write outside its directory.
func treePath(name string, strip int) (string, error) {
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) ||
		len(name) >= 2 && name[1] == ':' && ('a' <= name[0]|32 && name[0]|32 <= 'z') {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("entry %q has a NUL byte in its name", name)
	}
	var segs []string
	for _, s := range strings.Split(name, "/") {
		if s == "" {
			continue
		}
		// A backslash separates on Windows, where such a tree may be
		// checked out.
		if slices.Contains(strings.Split(s, `\`), "..") {
			return "", fmt.Errorf("entry %q leaves the tree with \"..\"", name)
		}
		segs = append(segs, s)
	}
	// Like tar --strip-components, a leading "./" counts as a component.
	if strip >= len(segs) {
		return "", nil
	}
	segs = slices.DeleteFunc(segs[strip:], func(s string) bool { return s == "." })
	for _, s := range segs {
		if strings.EqualFold(s, ".git") {
			return "", fmt.Errorf("entry %q would land in .git", name)
		}
	}
	return strings.Join(segs, "/"), nil
}

// gitMode is the git mode for a file of mode m.
func gitMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return modeSymlink
	case m&0o111 != 0:
		return modeExecutable
	}
	return modeFile
}

// Magic numbers of the compressions a tarball may have, and of formats
// it might be mistaken for.
var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	magicZstd  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicZip   = []byte("PK\x03\x04")
)

// decompress returns the tar stream of a tarball, compressed or not,
// telling the compression by its content since names lie.
func decompress(r *bufio.Reader) (io.Reader, error) {
	magic, _ := r.Peek(6)
	switch {
	case bytes.HasPrefix(magic, magicGzip):
		return gzip.NewReader(r)
	case bytes.HasPrefix(magic, magicBzip2):
		return bzip2.NewReader(r), nil
	case bytes.HasPrefix(magic, magicXz):
		return xz.NewReader(r)
	case bytes.HasPrefix(magic, magicZstd):
		return nil, errors.New("zstd compression is not supported: gzip, bzip2, xz or none")
	case bytes.HasPrefix(magic, magicZip):
		return nil, errors.New(`this is a zip archive: use a spec of type "zip"`)
	}
	return r, nil
}

// readTarball adds the entries of the tarball in file to t, with strip
// leading components dropped from their names.
func readTarball(file string, strip int, t *treeBuilder) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for first := true; ; first = false {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil && first {
			return fmt.Errorf("not a tarball (tar, compressed with gzip, bzip2, xz or not at all): %w", err)
		}
		if err != nil {
			return fmt.Errorf("read tarball: %w", err)
		}
		name, err := treePath(h.Name, strip)
		if err != nil {
			return err
		}
		if name == "" || h.Typeflag == tar.TypeDir {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeGNUSparse, tar.TypeCont:
			if err := t.add(name, gitMode(h.FileInfo().Mode()), h.Size, tr, h.ModTime); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if h.Linkname == "" {
				t.note("symbolic link %q: it has no target", h.Name)
				continue
			}
			if err := t.add(name, modeSymlink, int64(len(h.Linkname)), strings.NewReader(h.Linkname), h.ModTime); err != nil {
				return err
			}
		case tar.TypeLink:
			// Git has no hard links: the file is stored again under this
			// name, which costs nothing since the content is the same.
			target, err := treePath(h.Linkname, strip)
			if err != nil {
				return fmt.Errorf("hard link %q: %w", h.Name, err)
			}
			f, ok := t.files[target]
			if target == "" || !ok {
				t.note("hard link %q: its target %q is not among the files before it", h.Name, h.Linkname)
				continue
			}
			t.put(name, f, h.ModTime)
		default:
			t.note("%s %q: git keeps only files and symbolic links", tarKind(h.Typeflag), h.Name)
		}
	}
}

func tarKind(flag byte) string {
	switch flag {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("entry of type %q", flag)
}

// readZip adds the entries of the zip archive in file to t. A zip is read
// from its central directory at the end, so it has to be a file on disk.
func readZip(file string, strip int, t *treeBuilder) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("read zip: %w", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		name, err := treePath(f.Name, strip)
		if err != nil {
			return err
		}
		m := f.Mode()
		if name == "" || m.IsDir() || strings.HasSuffix(f.Name, "/") {
			continue
		}
		if m&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0 {
			t.note("%q: git keeps only files and symbolic links", f.Name)
			continue
		}
		if err := addZipFile(t, f, name); err != nil {
			return err
		}
	}
	return nil
}

func addZipFile(t *treeBuilder, f *zip.File, name string) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	m := f.Mode()
	if m&fs.ModeSymlink != 0 {
		target, err := io.ReadAll(io.LimitReader(rc, maxSymlink+1))
		if err != nil {
			return fmt.Errorf("entry %q: %w", f.Name, err)
		}
		if len(target) == 0 || len(target) > maxSymlink {
			t.note("symbolic link %q: its target is empty or too long", f.Name)
			return nil
		}
		return t.add(name, modeSymlink, int64(len(target)), bytes.NewReader(target), f.Modified)
	}
	if f.UncompressedSize64 > 1<<62 {
		return fmt.Errorf("entry %q: size %d is not believable", f.Name, f.UncompressedSize64)
	}
	if err := t.add(name, gitMode(m), int64(f.UncompressedSize64), rc, f.Modified); err != nil {
		return err
	}
	// The checksum is checked only once the reader reaches its end.
	if n, err := rc.Read(make([]byte, 1)); n > 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = errors.New("more data than its recorded size")
		}
		return fmt.Errorf("entry %q: %w", f.Name, err)
	}
	return nil
}

// readGzip adds the one file that the gzip file holds, as name. Its length
// is known only once it is uncompressed, and fast-import needs it first:
// a first pass counts it, so that the second can stream it.
func readGzip(file, name string, t *treeBuilder) error {
	size, mtime, err := gzipPass(file, nil)
	if err != nil {
		return err
	}
	_, _, err = gzipPass(file, func(zr *gzip.Reader) error {
		return t.add(name, modeFile, size, zr, mtime)
	})
	return err
}

// gzipPass reads the gzip file to its end, through use if given, and
// returns the uncompressed size and the header's time.
func gzipPass(file string, use func(*gzip.Reader) error) (int64, time.Time, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read gzip: %w", err)
	}
	// The header changes as later members of the file are read.
	mtime := zr.ModTime
	if use != nil {
		if err := use(zr); err != nil {
			return 0, time.Time{}, err
		}
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read gzip: %w", err)
	}
	if use != nil && n > 0 {
		return 0, time.Time{}, errors.New("read gzip: the file changed while it was read")
	}
	return n, mtime, nil
}

// fastImport writes a git fast-import stream.
type fastImport struct {
	w    *bufio.Writer
	mark int
}

// blob writes size bytes of r as a blob and returns its mark.
func (f *fastImport) blob(size int64, r io.Reader) (int, error) {
	f.mark++
	fmt.Fprintf(f.w, "blob\nmark :%d\ndata %d\n", f.mark, size)
	n, err := io.CopyN(f.w, r, size)
	if err == io.EOF {
		err = fmt.Errorf("ends after %d of its %d bytes", n, size)
	}
	if err != nil {
		return 0, err
	}
	return f.mark, f.w.WriteByte('\n')
}

// commit writes the commit of files, sorted by name, on ref.
func (f *fastImport) commit(ref string, c commitInfo, date int64, files map[string]treeFile) error {
	f.mark++
	who := fmt.Sprintf("%s %d +0000", lorryIdent, date)
	fmt.Fprintf(f.w, "commit %s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s\n",
		ref, f.mark, who, who, len(c.message), c.message)
	if c.parent != "" {
		fmt.Fprintf(f.w, "from %s\n", c.parent)
	}
	if !c.keepTree {
		f.w.WriteString("deleteall\n")
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(f.w, "M %s :%d %s\n", files[name].mode, files[name].mark, quotePath(name))
	}
	_, err := f.w.WriteString("\ndone\n")
	return err
}

// quotePath quotes a path C-style, which fast-import accepts for any path,
// whatever bytes it holds.
func quotePath(p string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
