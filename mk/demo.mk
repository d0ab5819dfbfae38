# The main job: a C producer fills one queue file; C, Go, Node and Rust workers drain it
# together; examples/demo.rs prints per-worker counts and checks order and exclusivity.
.PHONY: demo
demo: lib examples-c examples-go node-deps
	$(CARGO) build --release --example worker --example demo
	$(RELEASE_DIR)/examples/demo
