//! What a skipped entry is: its kinds' names and descriptions, and the kind of a file type.

use std::os::unix::fs::FileTypeExt;

use crate::SkipKind;

impl SkipKind {
    /// Why it is not read, as messages say it.
    pub fn describe(self) -> &'static str {
        match self {
            SkipKind::Fifo => "FIFO (named pipe), not read",
            SkipKind::Socket => "socket, not read",
            SkipKind::BlockDevice => "block device, not read",
            SkipKind::CharDevice => "character device, not read",
            SkipKind::Symlink => "symbolic link, not followed (use --follow)",
            SkipKind::SymlinkLoop => {
                "symbolic link loop: leads back to a directory above it, walked once"
            }
            SkipKind::Other => "not a regular file, not read",
        }
    }

    /// Its name in reports (`skipped` records).
    pub fn name(self) -> &'static str {
        match self {
            SkipKind::Fifo => "fifo",
            SkipKind::Socket => "socket",
            SkipKind::BlockDevice => "block-device",
            SkipKind::CharDevice => "char-device",
            SkipKind::Symlink => "symlink",
            SkipKind::SymlinkLoop => "symlink-loop",
            SkipKind::Other => "other",
        }
    }

    /// Every kind.
    pub const ALL: [SkipKind; 7] = [
        SkipKind::Fifo,
        SkipKind::Socket,
        SkipKind::BlockDevice,
        SkipKind::CharDevice,
        SkipKind::Symlink,
        SkipKind::SymlinkLoop,
        SkipKind::Other,
    ];

    /// The kind [`SkipKind::name`] names.
    pub fn from_name(name: &str) -> Option<SkipKind> {
        SkipKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind of a file type that is not read.
    pub fn of(ft: &std::fs::FileType) -> SkipKind {
        if ft.is_fifo() {
            SkipKind::Fifo
        } else if ft.is_socket() {
            SkipKind::Socket
        } else if ft.is_block_device() {
            SkipKind::BlockDevice
        } else if ft.is_char_device() {
            SkipKind::CharDevice
        } else if ft.is_symlink() {
            SkipKind::Symlink
        } else {
            SkipKind::Other
        }
    }
}
