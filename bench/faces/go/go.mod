module github.com/harel-transport/harel-transport/bench/faces/go

go 1.22

require github.com/harel-transport/harel-transport/bindings/go v0.0.0

replace github.com/harel-transport/harel-transport/bindings/go => ../../../bindings/go
