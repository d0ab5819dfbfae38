package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	_ "github.com/Shopify/toxiproxy/v2/toxics" // registers the toxics
	"github.com/rs/zerolog"
)

// toxics is toxiproxy's server, run in this process as a library: one proxy per cell and
// shard, each a loopback TCP port in front of a sqld, its toxics set through its Go API.
type toxics struct {
	srv *toxiproxy.ApiServer
	mu  sync.Mutex
	n   int
}

func newToxics() *toxics {
	return &toxics{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
}

// proxy listens on a free loopback port and forwards to upstream.
func (x *toxics) proxy(upstream string) (*proxy, error) {
	x.mu.Lock()
	x.n++
	name := fmt.Sprintf("p%d", x.n)
	x.mu.Unlock()
	p := toxiproxy.NewProxy(x.srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, err
	}
	return &proxy{p: p}, nil
}

type proxy struct{ p *toxiproxy.Proxy }

// url is what a client opens: http://127.0.0.1:PORT of the proxy.
func (p *proxy) url() string { return "http://" + p.p.Listen }

// toxic is one toxic as toxiproxy's API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

func (t toxic) String() string {
	var attrs []string
	for k, v := range t.Attributes {
		attrs = append(attrs, fmt.Sprintf("%s=%v", k, v))
	}
	return fmt.Sprintf("%s %s (%s)", t.Type, t.Stream, strings.Join(attrs, " "))
}

func (p *proxy) add(ts []toxic) error {
	for _, t := range ts {
		if t.Toxicity == 0 {
			t.Toxicity = 1
		}
		b, _ := json.Marshal(t)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
			return fmt.Errorf("toxic %s: %w", t.Name, err)
		}
	}
	return nil
}

// heal removes every toxic: connections made from now on pass untouched (data a toxic
// dropped stays dropped).
func (p *proxy) heal() { p.p.Toxics.ResetToxics(context.Background()) }

// down closes the listener and every connection through it (new connections are refused);
// up listens again on the same port.
func (p *proxy) down() { p.p.Stop() }
func (p *proxy) up() error {
	if p.p.Enabled {
		return nil
	}
	return p.p.Start()
}
func (p *proxy) close() { p.p.Stop() }
