// Package routes is the WEBAPP's HTTP interface: the /1.0 API that admins,
// minions and timers use, and the status page.
package routes

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"lorrycontroller.dev/lc/control"
	"lorrycontroller.dev/lc/forgehook"
)

// Server holds what the handlers need. Build it in main and call Handler.
type Server struct {
	// App performs the operations; its DB, Config and Log serve the
	// reads of the pages and the API too.
	*control.App

	// StatusHTML is where status-html writes its on-disk copy; "" for none.
	StatusHTML string

	// HookSecret is the secret that the forges' push hooks carry or sign
	// with; with none, the hook routes answer 403.
	HookSecret []byte

	// InsecureNoAuth asks no one for a token: whoever reaches the WEBAPP
	// may do everything, minions' work included. For tests and demos.
	InsecureNoAuth bool
	// ReadNeedsToken makes the pages and the read-only routes ask for a
	// token (or a signed-in browser) too; the health check stays open.
	ReadNeedsToken bool
	// MetricsNeedToken makes /metrics ask for a token.
	MetricsNeedToken bool
	// PublicURL is where browsers reach the WEBAPP (--public-url), "" if
	// not said. With https, cookies are Secure even though a TLS proxy in
	// front speaks plain HTTP to the WEBAPP.
	PublicURL string

	// usedMu guards used, the time each token's use was last written.
	usedMu sync.Mutex
	used   map[string]int64

	// copyMu guards copyErr, why the last write of the on-disk status
	// page failed ("" if it did not).
	copyMu  sync.Mutex
	copyErr string
	// bodyBudget bounds the memory of the request bodies being read.
	bodiesOnce sync.Once
	bodyBudget *budget
}

// Handler returns the WEBAPP's routes. All of them are registered here,
// the /1.0 ones through one function per area, called in a fixed order
// under the same middleware.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	requests := newRequestDurations()
	r.Use(measureRequests(requests))
	r.Use(s.recoverPanics)
	r.Use(s.logRequests)
	// A method the route does not have is refused first, whoever asks
	// and whatever the body: every route answers it the same way.
	r.Use(s.refuseMethods(r))
	// Every body is bounded before anything, the sign-in and the refusal
	// of a stranger among them, can read it; see body.go.
	r.Use(s.limitBodies)
	r.Use(s.authenticate)
	r.NotFound(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return errorf(http.StatusNotFound, "no such route: %s %s", r.Method, r.URL.Path)
	}))
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		s.methodNotAllowed(w, req, allowedMethods(r, req))
	})

	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/1.0/status-html", http.StatusFound)
	})
	// Monitoring: Prometheus scrapes this.
	r.Method(http.MethodGet, "/metrics", s.requireToken(s.MetricsNeedToken, s.metricsHandler(requests)))
	// The pages' style sheet and script.
	r.Get("/static/*", gzipped(s.handle(s.staticFile)))
	r.Route("/1.0", func(r chi.Router) {
		// No other site may have a browser change anything here.
		r.Use(s.refuseCrossOrigin)
		// Who may do what is decided here, for every route below; see
		// auth.go.
		r.Use(s.authorize)
		r.Use(s.refuseLargeBodies)
		r.Use(s.refuseBodyTypes)

		// The pages (-html) answer HTML. Their buttons post to routes named
		// like the API's with -html, which do what the API route does and
		// redirect (303) back to the page.
		s.statusRoutes(r)
		s.queueRoutes(r)
		s.jobRoutes(r)
		s.hostRoutes(r)
		s.hookRoutes(r)
		s.runtimeRoutes(r)
		s.minionRoutes(r)
		s.notificationRoutes(r)
		s.backupRoutes(r)
		s.signInRoutes(r)

		if s.FakeClock != nil {
			r.Post("/pretend-time", s.handle(s.pretendTime))
		}
	})
	return r
}

// statusRoutes: the state of the controller.
func (s *Server) statusRoutes(r chi.Router) {
	r.Get("/status", s.handle(s.status))
	r.Get("/status-html", s.page(s.statusHTML))
	r.Get("/health-check", s.handle(withTimeout(healthCheckTimeout, s.healthCheck)))
	// Load balancers and monitors often ask with HEAD: the same
	// answer, whose body the server leaves out.
	r.Head("/health-check", s.handle(withTimeout(healthCheckTimeout, s.healthCheck)))
	// This API, described for tools: docs/openapi.yaml.
	r.Get("/openapi.yaml", s.handle(s.openAPI))
}

// queueRoutes: the run queue.
func (s *Server) queueRoutes(r chi.Router) {
	r.Post("/stop-queue", s.handle(s.setQueue(false)))
	r.Post("/start-queue", s.handle(s.setQueue(true)))
	r.Get("/list-queue", s.handle(s.listQueue))
	r.Post("/move-to-top", s.handle(s.move(true)))
	r.Post("/move-to-bottom", s.handle(s.move(false)))
	r.Get("/lorry/*", s.handle(s.lorry))
	r.Get("/lorries", s.handle(s.listLorries))
	r.Get("/get-max-jobs", s.handle(s.getMaxJobs))
	r.Post("/set-max-jobs", s.handle(s.setMaxJobs))
	r.Get("/lorry-html/*", s.page(s.lorryHTML))
	r.Post("/stop-queue-html", s.action(s.setQueue(false), saidQueue(false)))
	r.Post("/start-queue-html", s.action(s.setQueue(true), saidQueue(true)))
	r.Post("/move-to-top-html", s.action(s.move(true), saidMove(true)))
	r.Post("/move-to-bottom-html", s.action(s.move(false), saidMove(false)))
	r.Post("/run-now", s.handle(s.runNow))
	r.Post("/run-now-html", s.action(s.runNow, saidRunNow))
	r.Post("/retry-lorry", s.handle(s.retryLorry))
	r.Post("/retry-lorry-html", s.action(s.retryLorry, saidRetryLorry))
	r.Post("/set-max-jobs-html", s.action(s.setMaxJobs, saidMaxJobs))
	r.Get("/get-host-max-jobs", s.handle(s.getHostMaxJobs))
	r.Post("/set-host-max-jobs", s.handle(s.setHostMaxJobs))
	r.Post("/set-host-max-jobs-html", s.action(s.setHostMaxJobs, saidHostMaxJobs))
}

// jobRoutes: jobs.
func (s *Server) jobRoutes(r chi.Router) {
	r.Get("/list-running-jobs", s.handle(s.listRunningJobs))
	r.Get("/list-jobs", s.handle(s.listJobs))
	r.Get("/job/{id}", s.handle(s.job))
	r.Post("/stop-job", s.handle(s.stopJob))
	r.Post("/remove-job", s.handle(s.removeJob))
	r.Post("/remove-ghost-jobs", s.handle(s.removeGhostJobs))
	r.Post("/remove-old-jobs", s.handle(s.removeOldJobs))
	r.Get("/list-jobs-html", s.page(s.listJobsHTML))
	r.Get("/job-html/{id}", s.page(s.jobHTML))
	// A running job's page follows its output with this.
	r.Get("/job-output/{id}", s.handle(s.jobOutput))
	r.Post("/stop-job-html", s.action(s.stopJob, saidStopJob))
	r.Post("/remove-job-html", s.action(s.removeJob, saidRemoveJob))
	r.Post("/remove-ghost-jobs-html", s.action(s.removeGhostJobs, saidRemoveGhostJobs))
}

// hostRoutes: configuration and Upstream Hosts. The hosts were called
// Troves once; both names stay.
func (s *Server) hostRoutes(r chi.Router) {
	r.Post("/read-configuration", s.handle(s.readConfiguration))
	r.Post("/ls-troves", s.handle(s.lsHosts(false)))
	r.Post("/ls-hosts", s.handle(s.lsHosts(false)))
	r.Post("/force-ls-troves", s.handle(s.lsHosts(true)))
	r.Post("/force-ls-hosts", s.handle(s.lsHosts(true)))
	r.Get("/hosts-html", s.page(s.hostsHTML))
	r.Post("/read-configuration-html", s.action(s.readConfiguration, saidReadConfiguration))
	r.Post("/force-ls-hosts-html", s.action(s.lsHosts(true), saidListHosts))
}

// hookRoutes: the forges' push hooks, each checked by its own secret or
// signature rather than a token; see auth.go and push.go.
func (s *Server) hookRoutes(r chi.Router) {
	r.Post("/hooks/gitlab", s.handle(s.hook(forgehook.GitLab)))
	r.Post("/hooks/gitea", s.handle(s.hook(forgehook.Gitea)))
	r.Post("/hooks/github", s.handle(s.hook(forgehook.GitHub)))
}

// runtimeRoutes: scraper runtimes, which minions download to build.
func (s *Server) runtimeRoutes(r chi.Router) {
	r.Get("/runtimes", s.handle(s.runtimes))
	r.Get("/runtime/{name}/{id}.tar", s.handle(s.runtimeTar))
}

// minionRoutes: minions. Asking for a job changes state: POST only.
func (s *Server) minionRoutes(r chi.Router) {
	r.Post("/give-me-job", s.handle(s.giveMeJob))
	r.Post("/job-update", s.handle(s.jobUpdate))
	r.Get("/minions-html", s.page(s.minionsHTML))
	r.Post("/retire-minion", s.handle(s.retireMinion(true)))
	r.Post("/unretire-minion", s.handle(s.retireMinion(false)))
	r.Post("/retire-minion-html", s.action(s.retireMinion(true), saidRetireMinion))
	r.Post("/unretire-minion-html", s.action(s.retireMinion(false), saidRetireMinion))
}

// notificationRoutes: what was posted to the notification URL, and how
// the receiver answered.
func (s *Server) notificationRoutes(r chi.Router) {
	r.Get("/notifications", s.handle(s.notifications))
	r.Get("/notifications-html", s.page(s.notificationsHTML))
}

// signInRoutes: signing in with a token, for the pages' buttons.
func (s *Server) signInRoutes(r chi.Router) {
	if !s.InsecureNoAuth {
		r.Get("/sign-in-html", s.page(s.signInForm))
		r.Post("/sign-in-html", s.page(s.signIn))
		r.Post("/sign-out-html", s.page(s.signOut))
	}
}

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		s.Log.Debug("request", "method", r.Method, "path", r.URL.Path,
			"status", ww.Status(), "duration_ms", time.Since(start).Milliseconds())
	})
}

// methods are the methods a route may have.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// allowedMethods are the methods of the route of req's path in routes,
// none if no route has its path.
func allowedMethods(routes chi.Routes, req *http.Request) []string {
	// The router goes by the escaped path when there is one.
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	var allowed []string
	for _, m := range methods {
		if routes.Find(chi.NewRouteContext(), m, path) != "" {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// refuseMethods answers 405 to a request whose route does not have its
// method, before the request is authenticated or its body read.
func (s *Server) refuseMethods(routes chi.Routes) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			allowed := allowedMethods(routes, r)
			if len(allowed) > 0 && !slices.Contains(allowed, r.Method) {
				s.methodNotAllowed(w, r, allowed)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// methodNotAllowed answers 405 with the Allow header that RFC 9110 asks
// for: the methods the route has.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allowed []string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "%s is not allowed on %s: only %s",
		r.Method, r.URL.Path, strings.Join(allowed, ", ")))
}
