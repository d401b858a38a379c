//! Image-reference validation: whatever is accepted is pinned by digest
//! and carries nothing an engine could read as something else.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::capability::docker::policy::is_pinned_image;

fuzz_target!(|image: &str| {
    if !is_pinned_image(image) {
        return;
    }
    assert!(image.len() <= 255);
    let (_, digest) = image.rsplit_once("sha256:").expect("a digest");
    assert_eq!(digest.len(), 64);
    assert!(
        digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    assert!(image.bytes().all(|b| b.is_ascii_graphic()), "{image:?}");
    assert!(image.matches('@').count() <= 1, "{image:?}");
    match image.split_once('@') {
        None => assert_eq!(image.len(), "sha256:".len() + 64),
        Some((reference, _)) => {
            // A tag (after the last `/`) may hold dots; the repository path
            // may not hold an empty or a `..` component.
            let last_slash = reference.rfind('/').map_or(0, |at| at + 1);
            let repository = match reference[last_slash..].rfind(':') {
                Some(colon) => &reference[..last_slash + colon],
                None => reference,
            };
            assert!(
                !repository.is_empty()
                    && !repository.starts_with('/')
                    && !repository.ends_with('/')
            );
            assert!(
                !repository.contains("//") && !repository.contains(".."),
                "{image:?}"
            );
        }
    }
});
