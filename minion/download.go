package minion

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"lorrycontroller.dev/lc/venv"
)

// maxRuntimeAnswer bounds the error body of a refused runtime download;
// the archive itself is bounded by the cache.
const maxRuntimeAnswer = 4 << 10

// fetchRuntime downloads the source of rt from the WEBAPP, with the
// minion's token. A runtime's source may take longer to come than any
// one request to the WEBAPP is given, so the client's timeout bounds how
// long the download may go without a byte arriving, not the whole of it.
func (m *Minion) fetchRuntime(ctx context.Context, rt venv.Runtime) (io.ReadCloser, error) {
	route := "runtime/" + url.PathEscape(rt.Name) + "/" + url.PathEscape(rt.ID) + ".tar"
	var body io.ReadCloser
	err := m.ask(ctx, route, false, func(ctx context.Context, base string) error {
		var err error
		body, err = m.fetchRuntimeFrom(ctx, base+"/1.0/"+route, rt)
		return err
	})
	return body, err
}

// fetchRuntimeFrom is fetchRuntime from the URL u.
func (m *Minion) fetchRuntimeFrom(ctx context.Context, u string, rt venv.Runtime) (io.ReadCloser, error) {
	client := *m.client
	stall := client.Timeout
	client.Timeout = 0
	ctx, cancel := context.WithCancelCause(ctx)
	body := &progressReader{ctx: ctx, cancel: cancel, stall: stall}
	if stall > 0 {
		body.watchdog = time.AfterFunc(stall, func() {
			cancel(fmt.Errorf("nothing received for %v", stall))
		})
	}
	fail := func(err error) (io.ReadCloser, error) {
		body.Close()
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(fmt.Errorf("runtime source: %w", err))
	}
	if m.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fail(fmt.Errorf("runtime source: %w", body.cause(err)))
	}
	body.r = resp.Body
	if resp.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxRuntimeAnswer))
		return fail(&StatusError{Route: "runtime/" + rt.Name + "/" + rt.ID + ".tar", Status: resp.StatusCode, Msg: errorText(answer)})
	}
	body.progress()
	return body, nil
}

// progressReader is a download's body that ends it once nothing has
// arrived for stall: each read that brings bytes puts off its watchdog.
type progressReader struct {
	r        io.ReadCloser
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stall    time.Duration
	watchdog *time.Timer
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("runtime source: %w", p.cause(err))
	}
	return n, err
}

func (p *progressReader) progress() {
	if p.watchdog != nil {
		p.watchdog.Reset(p.stall)
	}
}

// cause is the reason the download was cut short, if it was, else err.
func (p *progressReader) cause(err error) error {
	if p.ctx.Err() != nil {
		return context.Cause(p.ctx)
	}
	return err
}

func (p *progressReader) Close() error {
	if p.watchdog != nil {
		p.watchdog.Stop()
	}
	p.cancel(nil)
	if p.r == nil {
		return nil
	}
	return p.r.Close()
}
