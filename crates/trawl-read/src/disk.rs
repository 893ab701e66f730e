//! Where a file's data lies on its device (its first extent, from FIEMAP) and whether that
//! device seeks, for reading the files of a cold disk in the order they lie on it.

use std::fs::File;

use fiemap::FiemapExtentFlags;

/// The offset on its device of the first byte of `file`'s data; None where the file system does
/// not say (no FIEMAP: tmpfs, NFS, FUSE), the file has no data of its own there (empty, stored
/// inline in its inode, not yet allocated) or its place is unknown.
pub fn first_extent(file: &File) -> Option<u64> {
    let extent = fiemap::Fiemap::new(file).next()?.ok()?;
    let nowhere = FiemapExtentFlags::UNKNOWN
        | FiemapExtentFlags::DELALLOC
        | FiemapExtentFlags::DATA_INLINE
        | FiemapExtentFlags::DATA_TAIL;
    (!extent.fe_flags.intersects(nowhere)).then_some(extent.fe_physical)
}

/// Whether the block device `dev` (a file's `st_dev`) seeks, as its queue's `rotational` says:
/// Some(true) for a spinning disk, Some(false) for an SSD or NVMe; None where `dev` is no block
/// device (tmpfs, NFS, overlay), sysfs is absent, or the disk is a paravirtual one (virtio,
/// Xen), whose flag is 1 unless its host says otherwise, whatever lies behind it. A
/// partition's queue is its disk's.
pub fn device_seeks(dev: u64) -> Option<bool> {
    let node = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    let node = std::fs::canonicalize(node).ok()?;
    let disk = if node.join("queue").is_dir() {
        node
    } else {
        node.parent()?.to_path_buf()
    };
    let flag = std::fs::read_to_string(disk.join("queue/rotational")).ok()?;
    let driver = std::fs::read_link(disk.join("device/driver")).ok();
    let driver = driver.as_deref().and_then(|d| d.file_name()?.to_str());
    if matches!(driver, Some("virtio_blk" | "vbd")) {
        return None;
    }
    match flag.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    // Files with a place on a real device: tests/integration/order.rs (a loop-mounted image).
    #[test]
    fn an_empty_file_has_no_place() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(first_extent(&File::open(&empty).unwrap()), None);
    }

    #[test]
    fn no_block_device_neither_seeks_nor_not() {
        // /proc is on no block device.
        let dev = std::fs::metadata("/proc/self").unwrap().dev();
        assert_eq!(device_seeks(dev), None);
    }
}
