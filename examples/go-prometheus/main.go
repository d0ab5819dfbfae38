// Command go-prometheus serves a harel Transport's metrics to Prometheus at /metrics
// (promhttp), beside a worker that drains the queue: the Collector of collector.go reads
// Transport.Metrics at each scrape.
//
//	go-prometheus -db queue.db -listen :9464
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func main() {
	db := flag.String("db", "queue.db", "the queue's database")
	listen := flag.String("listen", ":9464", "where /metrics is served")
	flag.Parse()
	t, err := harel.Open(*db)
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewCollector(t, prometheus.Labels{"queue": *db}))
	http.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	go func() { log.Fatal(http.ListenAndServe(*listen, nil)) }()
	for {
		lease, err := t.ClaimWait(context.Background(), "go-prometheus", 30*time.Second, 5*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		if lease != nil {
			if err := t.Ack(lease); err != nil {
				log.Print(err)
			}
		}
	}
}
