module github.com/harel-transport/harel-transport/bench/goqite

go 1.24.0

require (
	github.com/harel-transport/harel-transport/bindings/go v0.0.0
	github.com/mattn/go-sqlite3 v1.14.53
	maragu.dev/goqite v0.4.0
)

require (
	go.opentelemetry.io/otel v1.35.0 // indirect
	go.opentelemetry.io/otel/trace v1.35.0 // indirect
)

replace github.com/harel-transport/harel-transport/bindings/go => ../../bindings/go
