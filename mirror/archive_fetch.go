package mirror

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"lorrycontroller.dev/lc/redact"
)

// Download timeouts. A whole download has no limit, since a large archive
// on a slow link may rightly take hours (the job's lorry-timeout bounds
// it); a server that stops sending is given up on.
const (
	dialTimeout    = 30 * time.Second
	headerTimeout  = 2 * time.Minute
	stallTimeout   = 2 * time.Minute
	progressStep   = 8 << 20
	maxRedirects   = 10
	downloadSuffix = ".part"
)

// validators are what an HTTP server said about the file last time, sent
// back so that it can answer "not modified" instead of the whole file.
type validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// download is a file fetched into the working area.
type download struct {
	path        string // "" when the server said it is not modified
	notModified bool
	size        int64
	sha256      string
	// modTime is the server's Last-Modified, or a local file's time; zero
	// when unknown.
	modTime time.Time
	validators
}

// fetchFile downloads rawURL (http, https, file or an absolute path) to dst,
// through dst+".part" so that dst is only ever a whole file. With cond, an
// HTTP server may answer that the file is unchanged. Progress goes to the
// job's output.
func (j *job) fetchFile(ctx context.Context, rawURL string, checkCertificates *bool, dst string, cond *validators) (download, error) {
	shown := redact.URLs(rawURL)
	part := dst + downloadSuffix
	os.Remove(part)
	local, isLocal, err := localPath(rawURL)
	if err != nil {
		return download{}, err
	}
	var d download
	if isLocal {
		fmt.Fprintf(j.out, "copying %s\n", shown)
		d, err = j.copyLocal(ctx, local, part)
	} else {
		fmt.Fprintf(j.out, "downloading %s\n", shown)
		d, err = j.fetchHTTP(ctx, rawURL, checkCertificates, part, cond)
	}
	if err != nil {
		os.Remove(part)
		return download{}, fmt.Errorf("download %s: %w", shown, err)
	}
	if d.notModified {
		fmt.Fprintf(j.out, "%s is not modified since the last download\n", shown)
		return d, nil
	}
	if err := os.Rename(part, dst); err != nil {
		os.Remove(part)
		return download{}, err
	}
	d.path = dst
	fmt.Fprintf(j.out, "downloaded %s (sha256 %s)\n", mib(d.size), d.sha256)
	return d, nil
}

// localPath tells whether rawURL names a local file, and which.
func localPath(rawURL string) (string, bool, error) {
	if strings.HasPrefix(rawURL, "/") {
		return rawURL, true, nil
	}
	if _, err := splitURL(rawURL); err != nil && !errors.Is(err, errNoURL) {
		return "", false, err
	}
	u, err := url.Parse(withoutUserinfo(rawURL))
	if err != nil {
		return "", false, fmt.Errorf("bad URL %q: %w", redact.URLs(rawURL), err)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", false, fmt.Errorf("file URL %q names another host", rawURL)
		}
		if u.Path == "" {
			return "", false, fmt.Errorf("file URL %q names no file", rawURL)
		}
		return u.Path, true, nil
	case "http", "https":
		return "", false, nil
	}
	return "", false, fmt.Errorf("cannot download %q: only http, https and file URLs are supported", redact.URLs(rawURL))
}

func (j *job) copyLocal(ctx context.Context, src, part string) (download, error) {
	in, err := os.Open(src)
	if err != nil {
		return download{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return download{}, err
	}
	if !fi.Mode().IsRegular() {
		return download{}, fmt.Errorf("%s is not a regular file", src)
	}
	d := download{modTime: fi.ModTime()}
	d.size, d.sha256, err = j.saveDownload(ctxReader{ctx, in}, part, fi.Size())
	return d, err
}

// saveDownload copies r to a new file part, hashing it and showing progress
// against total (-1 if unknown).
func (j *job) saveDownload(r io.Reader, part string, total int64) (int64, string, error) {
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	p := &progress{out: j.out, verb: "downloaded", step: progressStep, total: total}
	n, err := io.Copy(io.MultiWriter(f, h, p), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, "", err
	}
	if total >= 0 && n != total {
		return n, "", fmt.Errorf("got %d bytes; want %d", n, total)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func (j *job) fetchHTTP(ctx context.Context, rawURL string, checkCertificates *bool, part string, cond *validators) (download, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The credentials go in the request's header, from the URL as
	// splitURL reads it, which takes every character that the spec's
	// other types take; net/url refuses many.
	parts, err := splitURL(rawURL)
	if err != nil {
		return download{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, parts.plain(false), nil)
	if err != nil {
		return download{}, err
	}
	if parts.hasUser {
		req.SetBasicAuth(parts.user, parts.password)
	}
	req.Header.Set("User-Agent", "lorry")
	if cond != nil {
		if cond.ETag != "" {
			req.Header.Set("If-None-Match", cond.ETag)
		}
		if cond.LastModified != "" {
			req.Header.Set("If-Modified-Since", cond.LastModified)
		}
	}
	insecure := checkCertificates != nil && !*checkCertificates
	if insecure {
		fmt.Fprintf(j.out, "certificate checks are off for this spec\n")
	}
	resp, err := httpClient(insecure, j.opts.AllowLocalSources).Do(req)
	if err != nil {
		return download{}, err
	}
	defer resp.Body.Close()
	if cond != nil && resp.StatusCode == http.StatusNotModified {
		return download{notModified: true, validators: *cond}, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return download{}, fmt.Errorf("server answered %s", resp.Status)
	}
	d := download{validators: validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}}
	if t, err := http.ParseTime(d.LastModified); err == nil {
		d.modTime = t
	}
	total := resp.ContentLength
	body := &stallReader{r: resp.Body, timer: time.AfterFunc(stallTimeout, func() {
		cancel(fmt.Errorf("no data for %s", stallTimeout))
	})}
	defer body.timer.Stop()
	d.size, d.sha256, err = j.saveDownload(body, part, total)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return download{}, err
	}
	return d, nil
}

// ctxReader stops reading once ctx is done, so that a killed job does
// not first copy the rest of a large local file.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// stallReader keeps postponing its timer while data arrives.
type stallReader struct {
	r     io.Reader
	timer *time.Timer
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(stallTimeout)
	}
	return n, err
}

var (
	clientsOnce sync.Once
	// clients[insecure][allowLocal]: checking certificates or not,
	// connecting to local addresses or not.
	clients [2][2]*http.Client
)

// httpClient returns a client that follows redirects, uses the proxy of
// the environment and, if insecure, skips certificate verification.
// Unless allowLocal, it refuses to connect to loopback and link-local
// addresses (see localaddr.go). The clients are shared so that
// connections are reused.
func httpClient(insecure, allowLocal bool) *http.Client {
	clientsOnce.Do(func() {
		for i := range clients {
			for l := range clients[i] {
				dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.DialContext = dialer.DialContext
				if l == 0 {
					tr.DialContext = guardedDial(dialer)
					tr.Proxy = guardedProxy
				}
				tr.TLSHandshakeTimeout = dialTimeout
				tr.ResponseHeaderTimeout = headerTimeout
				// The file is wanted byte for byte: a .tar.gz that a
				// server sends gzip-encoded must not arrive as a .tar.
				tr.DisableCompression = true
				if i == 1 {
					tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
				}
				clients[i][l] = &http.Client{Transport: tr, CheckRedirect: checkRedirect}
			}
		}
	})
	return clients[b2i(insecure)][b2i(allowLocal)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirected to a %s URL", req.URL.Scheme)
	}
	return nil
}

// progress writes a line to out each time another step of data has gone
// through it, so that an admin sees a long download or import move.
type progress struct {
	out   io.Writer
	verb  string
	step  int64
	total int64 // <= 0 if unknown
	done  int64
}

func (p *progress) Write(b []byte) (int, error) {
	before := p.done / p.step
	p.done += int64(len(b))
	if p.done/p.step > before {
		if p.total > 0 {
			fmt.Fprintf(p.out, "  %s %s of %s\n", p.verb, mib(p.done), mib(p.total))
		} else {
			fmt.Fprintf(p.out, "  %s %s\n", p.verb, mib(p.done))
		}
	}
	return len(b), nil
}

func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// urlBaseName is the file name at the end of rawURL's path, which names
// what was downloaded in the tree, the tag and the commit message.
func urlBaseName(rawURL string) (string, error) {
	p := rawURL
	if !strings.HasPrefix(rawURL, "/") {
		u, err := url.Parse(withoutUserinfo(rawURL))
		if err != nil {
			return "", fmt.Errorf("bad URL %q: %w", redact.URLs(rawURL), err)
		}
		p = u.Path
	}
	base := path.Base(p)
	if base == "/" || base == "." || base == ".." || strings.HasSuffix(p, "/") {
		return "", fmt.Errorf("URL %q does not end in a file name", redact.URLs(rawURL))
	}
	return base, nil
}
