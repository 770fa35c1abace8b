package security_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
)

// B points notification channels (webhook, Slack, email) at services inside the control plane's
// network: by address, localhost, IPv6 and mapped forms, instance metadata. Each must be a 400
// naming the field. A name that resolves inside only after the channel exists passes the check
// when created; every delivery to it — the test action and an event's — must then reach
// nothing and fail saying why, without anything the inside answered.
func TestNotificationChannelsReachNoInternalAddress(t *testing.T) {
	const category = "ssrf: notification channels reach internal addresses"
	ctx := context.Background()
	in := startInside(t, "127.0.0.1")
	dns := fakedns.Start(t, map[string][]string{"hooks.attacker.test": {"203.0.113.10"}, "mail.attacker.test": {"203.0.113.11"}})
	tn := startTenants(t, servertest.Config{Edit: func(o *server.Options) { o.Net.Resolver = dns.Resolver() }})
	urls := []string{in.url + "/hook", "http://localhost:" + in.port + "/hook", "http://LocalHost.:" + in.port + "/hook",
		"http://[::ffff:127.0.0.1]:" + in.port + "/hook", "http://0.0.0.0:" + in.port + "/hook", "http://169.254.169.254/latest/meta-data",
		"http://[fe80::1]/hook", "http://2130706433:" + in.port + "/hook", "http://10.1.2.3/hook"}
	if in.url6 != "" {
		urls = append(urls, in.url6+"/hook")
	}
	tries, got := 0, 0
	var worst time.Duration
	try := func(field string, req client.CreateNotificationChannelRequest) {
		t.Helper()
		tries++
		before := in.hits.Load()
		start := time.Now()
		_, err := tn.bAdmin.CreateNotificationChannel(ctx, req)
		worst = max(worst, time.Since(start))
		if !refused(err, field) || in.hits.Load() != before {
			got++
			t.Errorf("%s %+v: %v (inside hits %d)", field, req, err, in.hits.Load()-before)
		}
	}
	for _, u := range urls {
		try("url", client.CreateNotificationChannelRequest{Name: "hook", Kind: "webhook", URL: u})
		try("url", client.CreateNotificationChannelRequest{Name: "chat", Kind: "slack", URL: u})
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", "169.254.169.254", "10.0.0.25"} {
		try("smtp.host", client.CreateNotificationChannelRequest{Name: "mail", Kind: "email",
			SMTP: &client.NotificationSMTP{Host: h, Port: 25, From: "b@bravo.test", To: []string{"b@bravo.test"}, Security: "none"}})
	}

	// Names that were public when the channels were made now resolve inside.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(in.url, "http://"))
	var p int
	for _, c := range port {
		p = p*10 + int(c-'0')
	}
	for _, req := range []client.CreateNotificationChannelRequest{
		{Name: "late-hook", Kind: "webhook", URL: "http://hooks.attacker.test:" + port + "/hook", Secret: "s"},
		{Name: "late-chat", Kind: "slack", URL: "http://hooks.attacker.test:" + port + "/services/x"},
		{Name: "late-mail", Kind: "email", SMTP: &client.NotificationSMTP{Host: "mail.attacker.test", Port: p, From: "b@bravo.test", To: []string{"b@bravo.test"}, Security: "none"}},
	} {
		if _, err := tn.bAdmin.CreateNotificationChannel(ctx, req); err != nil {
			t.Fatalf("channel %s: %v", req.Name, err)
		}
	}
	dns.Set("hooks.attacker.test", "127.0.0.1")
	dns.Set("mail.attacker.test", "127.0.0.1")
	for _, name := range []string{"late-hook", "late-chat", "late-mail"} {
		tries++
		before := in.hits.Load()
		start := time.Now()
		d, err := tn.bAdmin.TestNotificationChannel(ctx, name)
		worst = max(worst, time.Since(start))
		if err != nil || d.Status != "failed" || in.hits.Load() != before || !strings.Contains(d.LastError, "loopback") || strings.Contains(d.LastError, insideBody) {
			got++
			t.Errorf("test of %s: %+v, %v (inside hits %d)", name, d, err, in.hits.Load()-before)
		}
	}
	attack(t, category, tries, got, worst)
}
