module github.com/harel-transport/harel-transport/bindings/go

go 1.22
