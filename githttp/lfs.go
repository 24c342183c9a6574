package githttp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// LFS is a Git LFS server that answers the batch API's downloads from
// objects held in memory, beside a git server, so that tests and demos
// mirror repositories whose commits carry LFS pointer files. It serves
// the batch endpoint of every repository, <repo>/info/lfs/objects/batch,
// from the same objects, and the objects at /lfs-objects/<oid>.
type LFS struct {
	git http.Handler

	mu      sync.Mutex
	objects map[string][]byte // by sha256 object id
}

// NewLFS serves LFS objects and hands every other request to git.
func NewLFS(git http.Handler) *LFS {
	return &LFS{git: git, objects: map[string][]byte{}}
}

// Add keeps data as an object and returns the pointer file that names it.
func (l *LFS) Add(data []byte) (oid, pointer string) {
	sum := sha256.Sum256(data)
	oid = hex.EncodeToString(sum[:])
	l.Put(oid, data)
	return oid, fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", oid, len(data))
}

// Put serves data as the object oid, whether or not it is that object's
// content, so that a test can serve a corrupt object.
func (l *LFS) Put(oid string, data []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objects[oid] = data
}

// Remove stops serving the object oid.
func (l *LFS) Remove(oid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.objects, oid)
}

func (l *LFS) object(oid string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data, ok := l.objects[oid]
	return data, ok
}

const lfsMediaType = "application/vnd.git-lfs+json"

func (l *LFS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/info/lfs/objects/batch") && r.Method == http.MethodPost:
		l.batch(w, r)
	case strings.HasPrefix(r.URL.Path, "/lfs-objects/") && r.Method == http.MethodGet:
		data, ok := l.object(strings.TrimPrefix(r.URL.Path, "/lfs-objects/"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	case strings.Contains(r.URL.Path, "/info/lfs/"):
		http.Error(w, "this LFS server only serves downloads", http.StatusNotImplemented)
	default:
		l.git.ServeHTTP(w, r)
	}
}

type lfsObject struct {
	OID     string               `json:"oid"`
	Size    int64                `json:"size"`
	Actions map[string]lfsAction `json:"actions,omitempty"`
	Error   *lfsObjectError      `json:"error,omitempty"`
}

type lfsAction struct {
	Href string `json:"href"`
}

type lfsObjectError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// batch answers a download batch: an action for each object it has, and
// a 404 error for each it has not.
func (l *LFS) batch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Operation string      `json:"operation"`
		Objects   []lfsObject `json:"objects"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.Operation != "download" {
		http.Error(w, "this LFS server only serves downloads", http.StatusUnprocessableEntity)
		return
	}
	var objects []lfsObject
	for _, o := range req.Objects {
		a := lfsObject{OID: o.OID, Size: o.Size}
		if _, ok := l.object(o.OID); ok {
			a.Actions = map[string]lfsAction{"download": {Href: "http://" + r.Host + "/lfs-objects/" + o.OID}}
		} else {
			a.Error = &lfsObjectError{Code: http.StatusNotFound, Message: "object not found"}
		}
		objects = append(objects, a)
	}
	w.Header().Set("Content-Type", lfsMediaType)
	json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objects})
}
