module github.com/harel-transport/harel-transport/bench/faces/go

go 1.22.0

require github.com/harel-transport/harel-transport/bindings/go v0.0.0

require (
	go.opentelemetry.io/otel v1.35.0 // indirect
	go.opentelemetry.io/otel/trace v1.35.0 // indirect
)

replace github.com/harel-transport/harel-transport/bindings/go => ../../../bindings/go
