module github.com/harel-transport/harel-transport/tests/history

go 1.24.0

require github.com/harel-transport/harel-transport/bindings/go v0.0.0

require github.com/anishathalye/porcupine v1.3.1

require (
	go.opentelemetry.io/otel v1.35.0 // indirect
	go.opentelemetry.io/otel/trace v1.35.0 // indirect
)

replace github.com/harel-transport/harel-transport/bindings/go => ../../bindings/go
