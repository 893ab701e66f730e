//! The flags' values read into a plan: sizes.

use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert_eq!(parse_size("256K").unwrap(), 256 << 10);
    assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
    assert!(parse_size("12Q").is_err());
    assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
    assert_eq!(parse_size("0.5k").unwrap(), 512);
    assert_eq!(parse_size("2 GiB").unwrap(), 2 << 30);
    assert_eq!(parse_size("7b").unwrap(), 7);
    for bad in ["1.5", "1.G", ".5G", "-1M", "1,5G", "", "M", "1MB2"] {
        let e = parse_size(bad).unwrap_err().to_string();
        assert!(e.contains("use e.g."), "{bad}: {e}");
    }
    assert!(parse_size("99999999999T").is_err());
}
