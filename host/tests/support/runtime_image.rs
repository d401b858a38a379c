//! The test runtime image, built with the Engine's import API (no registry
//! is reachable): Debian's static busybox, a stand-in `oac-daemon` that
//! validates the bootstrap file and stays alive, and a `runtime` user 1000.

use bollard::Docker;
use futures_util::StreamExt;
use std::path::Path;

/// Repository and tag of the imported image.
pub const IMAGE: &str = "oac-test-runtime:test";

/// The stand-in daemon: refuses to run without a readable bootstrap record
/// holding a credential, then waits forever.
const DAEMON: &str = r#"#!/bin/sh
[ "$1" = connect ] || exit 64
file=/home/runtime/runtime-bootstrap.json
[ -r "$file" ] || exit 65
grep -q '"daemon_credential"' "$file" || exit 66
exec sleep 2147483647
"#;

fn entry(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    mode: u32,
    kind: tar::EntryType,
    content: &[u8],
    link: Option<&str>,
) {
    let mut header = tar::Header::new_gnu();
    header.set_path(path).expect("path");
    header.set_mode(mode);
    header.set_size(content.len() as u64);
    header.set_entry_type(kind);
    header.set_mtime(0);
    if let Some(target) = link {
        header.set_link_name(target).expect("link");
    }
    header.set_cksum();
    builder.append(&header, content).expect("append");
}

/// The rootfs tarball.
pub fn rootfs(busybox: &Path) -> Vec<u8> {
    let binary = std::fs::read(busybox).expect("read busybox (apt-get install busybox-static)");
    let listed = std::process::Command::new(busybox)
        .arg("--list")
        .output()
        .expect("busybox --list");
    let mut builder = tar::Builder::new(Vec::new());
    for dir in [
        "bin",
        "etc",
        "home",
        "environment",
        "workspace",
        "proc",
        "sys",
        "dev",
        "usr",
        "usr/local",
        "usr/local/bin",
    ] {
        entry(
            &mut builder,
            dir,
            0o755,
            tar::EntryType::Directory,
            b"",
            None,
        );
    }
    // Docker copies the image's /tmp attributes onto the tmpfs mounted there.
    entry(
        &mut builder,
        "tmp",
        0o1777,
        tar::EntryType::Directory,
        b"",
        None,
    );
    entry(
        &mut builder,
        "bin/busybox",
        0o755,
        tar::EntryType::Regular,
        &binary,
        None,
    );
    for applet in String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|name| !name.is_empty() && *name != "busybox")
    {
        entry(
            &mut builder,
            &format!("bin/{applet}"),
            0o777,
            tar::EntryType::Symlink,
            b"",
            Some("busybox"),
        );
    }
    entry(
        &mut builder,
        "usr/local/bin/oac-daemon",
        0o755,
        tar::EntryType::Regular,
        DAEMON.as_bytes(),
        None,
    );
    let passwd =
        "root:x:0:0:root:/root:/bin/sh\nruntime:x:1000:1000:runtime:/home/runtime:/bin/sh\n";
    let group = "root:x:0:\nruntime:x:1000:\n";
    entry(
        &mut builder,
        "etc/passwd",
        0o644,
        tar::EntryType::Regular,
        passwd.as_bytes(),
        None,
    );
    entry(
        &mut builder,
        "etc/group",
        0o644,
        tar::EntryType::Regular,
        group.as_bytes(),
        None,
    );
    builder.into_inner().expect("tar")
}

/// Imports the image (idempotent) and returns its id, `sha256:…`.
pub async fn import(engine: &Docker) -> String {
    let busybox = Path::new("/bin/busybox");
    let options = bollard::query_parameters::CreateImageOptionsBuilder::default()
        .from_src("-")
        .repo("oac-test-runtime")
        .tag("test")
        .build();
    let mut progress = engine.create_image(
        Some(options),
        Some(bollard::body_full(rootfs(busybox).into())),
        None,
    );
    while let Some(step) = progress.next().await {
        step.expect("image import");
    }
    engine
        .inspect_image(IMAGE)
        .await
        .expect("imported image")
        .id
        .expect("image id")
}
