package routes

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"lorrycontroller/control"
	"lorrycontroller/minionname"
	"lorrycontroller/statedb"
)

// jobOffer is the answer to give-me-job.
type jobOffer struct {
	JobID   int64  `json:"job_id"`
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Timeout int64  `json:"timeout"` // seconds, as the lorry's lorry-timeout
	PushURL string `json:"push_url"`
	// Scraper is set for a scraper, which pushes nowhere.
	Scraper *scraperOffer `json:"scraper,omitempty"`
	// AllowLocalSources is passed on to lorry as --allow-local-sources.
	AllowLocalSources bool `json:"allow_local_sources"`
	leaseTerms
	OutputLimit int64 `json:"output_limit"` // bytes
}

// leaseTerms go with every answer to a minion about its job: the minion
// kills its job when it has delivered no job-update for Lease seconds, and
// gives it at most KillGrace seconds between SIGTERM and SIGKILL.
type leaseTerms struct {
	Lease     int64 `json:"lease"`
	KillGrace int64 `json:"kill_grace"`
}

// leaseWire is the lease terms as the answers to a minion show them.
func leaseWire(t control.LeaseTerms) leaseTerms {
	return leaseTerms{Lease: t.Lease, KillGrace: t.KillGrace}
}

// offerWire is the answer to give-me-job that hands out o.
func offerWire(o *control.Offer) jobOffer {
	offer := jobOffer{JobID: o.Job.ID, Path: o.Job.Path, Kind: o.Job.Kind, Text: o.Text, Timeout: o.Job.Timeout,
		PushURL: o.PushURL, AllowLocalSources: o.AllowLocalSources, leaseTerms: leaseWire(o.LeaseTerms),
		OutputLimit: o.OutputLimit}
	if sc := o.Scraper; sc != nil {
		rt := sc.Runtime
		offer.Scraper = &scraperOffer{
			Runtime: runtimeOffer{Name: rt.Name, Version: rt.Version, ID: rt.ID, Python: rt.Python},
			Argv:    sc.Argv, Env: sc.Env, Config: make([]configFile, len(sc.Config)), FDArgs: sc.FDArgs,
		}
		for i, f := range sc.Config {
			offer.Scraper.Config[i] = configFile{Name: f.Name, Path: f.Path, Content: f.Content}
		}
	}
	return offer
}

func minionParams(p params) (statedb.MinionID, error) {
	m := statedb.MinionID{Name: p["minion"], Host: p["host"],
		Queues: queueList(p["queues"]), IgnoreQueues: queueList(p["ignore_queues"])}
	if p["pid"] != "" {
		pid, err := p.int("pid")
		if err != nil {
			return m, err
		}
		m.PID = pid
	}
	return m, nil
}

// kindList reads the kinds of entry a minion takes (its --kinds), comma
// separated; none (a minion from before kinds) means every kind.
func kindList(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		switch k = strings.TrimSpace(k); k {
		case "":
		case KindLorry, KindScraper:
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		default:
			return nil, errorf(http.StatusBadRequest, "kinds: %q is neither %s nor %s", k, KindLorry, KindScraper)
		}
	}
	return out, nil
}

func (s *Server) giveMeJob(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	m, err := minionParams(p)
	if err != nil {
		return err
	}
	if m.Host == "" || m.PID == 0 {
		return errorf(http.StatusBadRequest, "give-me-job needs host and pid")
	}
	if m.Kinds, err = kindList(p["kinds"]); err != nil {
		return err
	}
	if m.Name == "" {
		m.Name = m.Host + "-" + strconv.FormatInt(m.PID, 10)
	}
	if err := minionname.Check(m.Name); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if err := claimMinion(r, m.Name); err != nil {
		return err
	}
	h, err := s.HandOut(r.Context(), m)
	switch {
	case err != nil:
		return err
	case h.Retire:
		return ok(w, map[string]bool{"retire": true})
	case h.Offer == nil:
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return ok(w, offerWire(h.Offer))
}

func (s *Server) jobUpdate(w http.ResponseWriter, r *http.Request) error {
	// The output is streamed from the body into spools, with credentials
	// hidden on the way (git and the tools lorry runs may print the URLs
	// they were given), and read back in pieces as it is stored.
	head, tail := s.DB.OutputCaps()
	// Its other parameters are small but for refs, which may be large.
	b, err := s.readBody(r, maxBody, smallBody+maxRefsBytes, updateMemory+maxRefsBytes, streamFields, head, tail)
	if err != nil {
		return err
	}
	defer b.Close()
	p := b.params
	var u statedb.JobUpdate
	for _, f := range streamFields {
		if sp := b.stream(f); sp != nil {
			u.Spooled = append(u.Spooled, sp)
		}
	}
	if u.ID, err = p.jobID(); err != nil {
		return err
	}
	if u.Minion, err = minionParams(p); err != nil {
		return err
	}
	if u.Minion.Name != "" {
		if err := minionname.Check(u.Minion.Name); err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
	}
	// The job must be this minion's, and the minion the token's: the name
	// is checked against the job's owner when the update is applied.
	if err := claimMinion(r, u.Minion.Name); err != nil {
		return err
	}
	switch e := p["exit"]; e {
	case "", "no":
	default:
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return errorf(http.StatusBadRequest, "exit %q is neither \"no\" nor an exit code", e)
		}
		u.Exit = &n
	}
	if u.DiskUsage, err = p.optionalInt("disk_usage"); err != nil {
		return err
	}
	if cut, err := p.optionalInt("cut_bytes"); err != nil {
		return err
	} else if cut != nil {
		if *cut < 0 {
			return errorf(http.StatusBadRequest, "cut_bytes %d is negative", *cut)
		}
		u.CutBytes = *cut
	}
	if err := runtimeParams(p, &u); err != nil {
		return err
	}
	if u.Head, err = p.branch("head"); err != nil {
		return err
	}
	if u.Head != "" && u.Exit == nil {
		return errorf(http.StatusBadRequest, "head is reported with the final update only, with exit")
	}
	if u.Refs, err = p.refs("refs"); err != nil {
		return err
	}
	if u.Refs != nil && u.Exit == nil {
		return errorf(http.StatusBadRequest, "refs are reported with the final update only, with exit")
	}
	if u.ErrorClass, err = p.errorClass("error_class"); err != nil {
		return err
	}
	if u.ErrorClass != "" && u.Exit == nil {
		return errorf(http.StatusBadRequest, "error_class is reported with the final update only, with exit")
	}
	res, err := s.UpdateJob(r.Context(), u)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Kill   bool `json:"kill"`
		Retire bool `json:"retire,omitempty"`
		leaseTerms
	}{res.Kill, res.Retire, leaseWire(res.LeaseTerms)})
}

func (s *Server) pretendTime(w http.ResponseWriter, r *http.Request) error {
	p, err := s.readParams(r)
	if err != nil {
		return err
	}
	now, err := p.int("now")
	if err != nil {
		return err
	}
	if err := s.PretendTime(r.Context(), now); err != nil {
		return err
	}
	return ok(w, map[string]int64{"now": now})
}
