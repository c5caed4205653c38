//! With the `dpdk` feature: compiles the C shim over DPDK (`src/dpdk/shim.c`) against
//! the system's libdpdk (pkg-config `libdpdk`, Debian's `libdpdk-dev`) and links it.
//! Nothing is downloaded.

fn main() {
    #[cfg(feature = "dpdk")]
    dpdk();
}

#[cfg(feature = "dpdk")]
fn dpdk() {
    println!("cargo:rerun-if-changed=src/dpdk/shim.c");
    let lib = match pkg_config::Config::new()
        .atleast_version("22.11")
        .cargo_metadata(false)
        .probe("libdpdk")
    {
        Ok(l) => l,
        Err(e) => {
            println!(
                "cargo:warning=the dpdk feature needs DPDK >= 22.11 and pkg-config \
                 (Debian: apt-get install libdpdk-dev pkg-config): {e}"
            );
            std::process::exit(1);
        }
    };
    let mut b = cc::Build::new();
    b.file("src/dpdk/shim.c")
        .flag_if_supported("-Wno-unused-parameter")
        // DPDK's headers use SSE4.2 intrinsics in inline functions (as its .pc asks)
        .flag_if_supported("-msse4.2");
    for p in &lib.include_paths {
        b.include(p);
    }
    for (k, v) in &lib.defines {
        b.define(k, v.as_deref());
    }
    b.compile("p4jet_dpdk_shim");
    // after the shim, which needs them (the libraries are linked --as-needed)
    for p in &lib.link_paths {
        println!("cargo:rustc-link-search=native={}", p.display());
    }
    for l in &lib.libs {
        println!("cargo:rustc-link-lib={l}");
    }
}
