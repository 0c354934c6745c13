//! Builds the few lines of C that give keel the platform's `long double`
//! (INCRBYFLOAT and HINCRBYFLOAT compute in it, as Redis does).

fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    cc::Build::new()
        .file("csrc/long_double.c")
        .warnings(true)
        .compile("keel_long_double");
}
