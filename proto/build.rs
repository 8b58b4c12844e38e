//! Compiles `retro.proto` with the vendored protoc, so a fresh machine needs no
//! system protoc. (The build's git commit is `retro-build-info`'s, a crate of
//! its own so that a commit does not rebuild the wire and everything above it.)

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };
    println!("cargo:rerun-if-changed=retro.proto");
    tonic_prost_build::configure().compile_protos(&["retro.proto"], &["."])?;
    Ok(())
}
