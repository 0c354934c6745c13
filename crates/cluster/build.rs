//! Nothing to build: `protoc-bin-vendored` is a build dependency only so
//! that cargo fetches the compiler before etcd-client's build script asks
//! scripts/protoc for it.
fn main() {
    let _ = protoc_bin_vendored::protoc_bin_path;
}
