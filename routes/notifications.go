package routes

import (
	"encoding/json"
	"net/http"

	"lorrycontroller.dev/lc/redact"
	"lorrycontroller.dev/lc/statedb"
)

// notificationsShown is how many deliveries the notifications routes list.
const notificationsShown = 100

// deliveryJSON is one delivery as the notifications route shows it.
type deliveryJSON struct {
	ID       int64  `json:"id"`
	Event    string `json:"event"`
	Time     int64  `json:"time"`
	Status   string `json:"status"`
	Attempts int64  `json:"attempts"`
	LastTry  *int64 `json:"last_try"`
	// LastCode is the receiver's last HTTP status, null if it never
	// answered.
	LastCode  *int64 `json:"last_code"`
	LastError string `json:"last_error"`
	// NextTry is null unless the delivery is pending.
	NextTry *int64          `json:"next_try"`
	Payload json.RawMessage `json:"payload"`
}

func deliveryWire(d statedb.Delivery) deliveryJSON {
	w := deliveryJSON{ID: d.ID, Event: d.Event, Time: d.Created, Status: d.Status, Attempts: d.Attempts,
		LastTry: d.LastTry, LastCode: d.LastCode, LastError: d.LastError, Payload: json.RawMessage(redact.JSON(d.Payload))}
	if d.Status == statedb.DeliveryPending {
		next := d.NextTry
		w.NextTry = &next
	}
	return w
}

// notificationsJSON is the answer of the notifications route.
type notificationsJSON struct {
	Enabled bool `json:"enabled"`
	// Target is where notifications go, as redact.Origin shows it: the
	// user, path and query of a webhook's URL are often its secret.
	Target string   `json:"target"`
	Events []string `json:"events"`
	// Counts are the deliveries in the outbox by status.
	Counts     map[string]int64 `json:"counts"`
	Deliveries []deliveryJSON   `json:"deliveries"`
}

func (s *Server) readNotifications(r *http.Request) (notificationsJSON, int64, error) {
	n := notificationsJSON{Enabled: s.Notifications.URL != "", Target: redact.Origin(s.Notifications.URL),
		Events: s.Notifications.Events, Deliveries: []deliveryJSON{}}
	if n.Events == nil {
		n.Events = []string{}
	}
	o, err := s.ReadOutbox(r.Context(), notificationsShown)
	if err != nil {
		return n, 0, err
	}
	n.Counts = o.Counts
	for _, d := range o.Deliveries {
		n.Deliveries = append(n.Deliveries, deliveryWire(d))
	}
	return n, o.Now, nil
}

func (s *Server) notifications(w http.ResponseWriter, r *http.Request) error {
	n, _, err := s.readNotifications(r)
	if err != nil {
		return err
	}
	return ok(w, n)
}

// deliveryView is one row of the notifications page.
type deliveryView struct {
	deliveryJSON
	Class string
	// Lorry and Host are what the event is about, where it says.
	Lorry string
	Host  string
	JobID int64
}

type notificationsView struct {
	pageBase
	notificationsJSON
	Rows []deliveryView
}

func (s *Server) notificationsHTML(w http.ResponseWriter, r *http.Request) error {
	n, now, err := s.readNotifications(r)
	if err != nil {
		return err
	}
	v := notificationsView{notificationsJSON: n}
	for _, d := range n.Deliveries {
		row := deliveryView{deliveryJSON: d}
		var about struct {
			Lorry string `json:"lorry"`
			Host  string `json:"host"`
			JobID int64  `json:"job_id"`
		}
		json.Unmarshal(d.Payload, &about)
		row.Lorry, row.Host, row.JobID = about.Lorry, about.Host, about.JobID
		switch d.Status {
		case statedb.DeliveryDelivered:
			row.Class = "s-ok"
		case statedb.DeliveryFailed:
			row.Class = "s-failed"
		case statedb.DeliveryPending:
			row.Class = "s-waiting"
			if d.Attempts > 0 {
				row.Class = "s-error"
			}
		}
		v.Rows = append(v.Rows, row)
	}
	v.pageBase = livePage(w, r, "Notifications", "notifications", now)
	return writePage(w, http.StatusOK, "notifications.html", v)
}
