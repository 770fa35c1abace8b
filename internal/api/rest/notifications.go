package rest

import (
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/notify"
)

func (a *API) createNotificationChannel(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateNotificationChannelRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	spec := notify.ChannelSpec{Name: in.Name, Kind: in.Kind, URL: in.URL, Secret: in.Secret}
	if m := in.SMTP; m != nil {
		spec.SMTP = &notify.SMTP{Host: m.Host, Port: m.Port, Username: m.Username, Password: m.Password, From: m.From, To: m.To, Security: m.Security}
	}
	c, err := a.notify.CreateChannel(r.Context(), principal(r), spec)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toNotificationChannel(c))
	return nil
}

func (a *API) listNotificationChannels(w http.ResponseWriter, r *http.Request) error {
	cs, err := a.notify.ListChannels(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.NotificationChannel]{Items: make([]client.NotificationChannel, 0, len(cs))}
	for _, c := range cs {
		out.Items = append(out.Items, toNotificationChannel(c))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) deleteNotificationChannel(w http.ResponseWriter, r *http.Request) error {
	if err := a.notify.DeleteChannel(r.Context(), principal(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) testNotificationChannel(w http.ResponseWriter, r *http.Request) error {
	d, err := a.notify.SendTest(r.Context(), principal(r), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toNotificationDelivery(d))
	return nil
}

func (a *API) createNotificationSubscription(w http.ResponseWriter, r *http.Request) error {
	var in client.CreateNotificationSubscriptionRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	s, err := a.notify.CreateSubscription(r.Context(), principal(r), notify.SubscriptionSpec{Channel: in.Channel, Events: in.Events,
		Pipeline: in.Pipeline, Application: in.Application})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, toNotificationSubscription(s))
	return nil
}

func (a *API) listNotificationSubscriptions(w http.ResponseWriter, r *http.Request) error {
	ss, err := a.notify.ListSubscriptions(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := client.List[client.NotificationSubscription]{Items: make([]client.NotificationSubscription, 0, len(ss))}
	for _, s := range ss {
		out.Items = append(out.Items, toNotificationSubscription(s))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) deleteNotificationSubscription(w http.ResponseWriter, r *http.Request) error {
	if err := a.notify.DeleteSubscription(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) listNotificationDeliveries(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.PageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ds, err := a.notify.Deliveries(r.Context(), principal(r), notify.DeliveryFilter{Channel: q.Get("channel"), Status: q.Get("status")}, page)
	if err != nil {
		return err
	}
	out := client.List[client.NotificationDelivery]{Items: make([]client.NotificationDelivery, 0, len(ds))}
	for _, d := range ds {
		out.Items = append(out.Items, toNotificationDelivery(d))
	}
	if len(ds) > 0 {
		out.NextCursor = httpx.NextCursor(page, len(ds), ds[len(ds)-1].ID)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func toNotificationChannel(c notify.Channel) client.NotificationChannel {
	out := client.NotificationChannel{Name: c.Name, Kind: c.Kind, URL: c.URL, HasSecret: c.HasSecret, CreatedAt: c.CreatedAt}
	if m := c.SMTP; m != nil {
		out.SMTP = &client.NotificationSMTP{Host: m.Host, Port: m.Port, Username: m.Username, From: m.From, To: m.To, Security: m.Security}
	}
	return out
}

func toNotificationSubscription(s notify.Subscription) client.NotificationSubscription {
	return client.NotificationSubscription{ID: s.ID, Channel: s.Channel, Events: s.Events, Pipeline: s.Pipeline, Application: s.Application, CreatedAt: s.CreatedAt}
}

func toNotificationDelivery(d notify.Delivery) client.NotificationDelivery {
	out := client.NotificationDelivery{ID: d.ID, Channel: d.Channel, Event: d.Event, EventKey: d.EventKey, Title: d.Title, Status: d.Status,
		Attempts: make([]client.NotificationAttempt, 0, len(d.Attempts)), NextAttemptAt: timeOrNil(d.NextAttemptAt), LastError: d.LastError,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	for _, at := range d.Attempts {
		out.Attempts = append(out.Attempts, client.NotificationAttempt{Attempt: at.Attempt, At: at.At, DurationMs: at.Duration.Milliseconds(),
			StatusCode: at.StatusCode, Error: at.Error})
	}
	return out
}
