use super::*;
use crate::OpenMode;

/// A window is `HH:MM-HH:MM`: inside from its start (included) to its end (excluded), past
/// midnight where it ends before it starts; a window of no time, or that is not a time of
/// day, is refused with what is wrong.
#[test]
fn a_window_is_a_time_of_day_and_may_run_past_midnight() {
    let night = Window::parse("01:00-06:00").unwrap();
    assert_eq!(night.to_string(), "01:00-06:00");
    assert!(!night.contains(59));
    assert!(night.contains(60));
    assert!(night.contains(6 * 60 - 1));
    assert!(!night.contains(6 * 60));
    let over = Window::parse("22:30-6:00").unwrap();
    assert_eq!(over.to_string(), "22:30-06:00");
    assert!(over.contains(23 * 60) && over.contains(0) && over.contains(5 * 60 + 59));
    assert!(!over.contains(6 * 60) && !over.contains(22 * 60 + 29));
    let day = Window::parse("00:00-24:00").unwrap();
    assert!((0..24 * 60).all(|m| day.contains(m)));
    for (bad, why) in [
        ("01:00", "expected HH:MM-HH:MM"),
        ("1-6", "expected HH:MM-HH:MM"),
        ("25:00-06:00", "expected HH:MM-HH:MM"),
        ("01:60-06:00", "expected HH:MM-HH:MM"),
        ("24:00-06:00", "expected HH:MM-HH:MM"),
        ("01:0-06:00", "expected HH:MM-HH:MM"),
        ("-1:00-06:00", "expected HH:MM-HH:MM"),
        ("03:00-03:00", "holds no time"),
    ] {
        let e = Window::parse(bad).unwrap_err();
        assert!(e.to_string().contains(why), "{bad}: {e}");
        assert_eq!(e.given, bad);
    }
}

fn catalog() -> (tempfile::TempDir, Catalog) {
    let t = tempfile::tempdir().unwrap();
    let cat = Catalog::open(&t.path().join("cat.db"), OpenMode::Write).unwrap();
    (t, cat)
}

/// A policy set is read back as set, replaced whole by the next, and gone once cleared.
#[test]
fn a_policy_is_kept_replaced_and_cleared() {
    let (_t, cat) = catalog();
    assert_eq!(cat.policy().unwrap(), None);
    let p = Policy {
        every: Duration::from_secs(90 * 86_400),
        max_bytes: Some(500 << 30),
        max_time: Some(Duration::from_secs(7200)),
        window: Some(Window::parse("01:00-06:00").unwrap()),
    };
    cat.set_policy(&p, 1000).unwrap();
    assert_eq!(cat.policy().unwrap(), Some(p.clone()));
    let q = Policy {
        every: Duration::from_secs(86_400),
        max_bytes: None,
        max_time: None,
        window: None,
    };
    cat.set_policy(&q, 2000).unwrap();
    assert_eq!(cat.policy().unwrap(), Some(q));
    assert!(cat.clear_policy().unwrap());
    assert_eq!(cat.policy().unwrap(), None);
    assert!(!cat.clear_policy().unwrap());
}

/// A stored policy no command could have set (edited by hand) is refused, saying what.
#[test]
fn a_policy_edited_to_nonsense_is_refused() {
    let (_t, cat) = catalog();
    cat.conn
        .execute_batch("INSERT INTO policy VALUES (1, 0, NULL, NULL, '9-9', 0)")
        .unwrap();
    let e = cat.policy().unwrap_err();
    assert!(matches!(e, CatalogError::BadPolicy { .. }), "{e}");
    assert!(e.to_string().contains("every is 0"), "{e}");
    // Text or a fraction where a whole number goes (SQLite keeps what it is given), a window
    // that is a number: named, not an SQLite type error.
    for (set, what) in [
        (
            "every = 'soon', window = NULL",
            "every is 'soon', not a whole number",
        ),
        (
            "every = 60, max_time = 1.5",
            "max_time is 1.5, not a whole number",
        ),
        ("every = 60, window = x'00'", "window is a blob of 1 bytes"),
        // Longer than any flag takes: a hundred years and a second, and the most SQLite holds.
        (
            "every = 3155760001, window = NULL",
            "every is 3155760001 seconds, more than 100 years",
        ),
        (
            "every = 60, max_time = 9223372036854775807",
            "max_time is 9223372036854775807 seconds, more than 100 years",
        ),
    ] {
        cat.conn
            .execute_batch(&format!("UPDATE policy SET {set}"))
            .unwrap();
        let e = cat.policy().unwrap_err();
        assert!(matches!(e, CatalogError::BadPolicy { .. }), "{e}");
        assert!(e.to_string().contains(what), "{e}");
        assert!(e.to_string().contains("--every 90d"), "{e}");
    }
    // A hundred years exactly is what the flags take: kept.
    cat.conn
        .execute_batch("UPDATE policy SET every = 3155760000, max_time = 3155760000")
        .unwrap();
    let p = cat.policy().unwrap().unwrap();
    assert_eq!(p.every, LONGEST);
    assert_eq!(p.max_time, Some(LONGEST));
}

/// Due: present files never verified or verified longer ago than the period (strictly),
/// oldest first; a missing file is not due, a corrupt one is by the verification it had.
#[test]
fn due_files_are_the_present_ones_verified_too_long_ago_oldest_first() {
    let (_t, cat) = catalog();
    cat.conn
        .execute_batch(
            "INSERT INTO roots VALUES (1, CAST('/r' AS BLOB));
             INSERT INTO dirs VALUES (1, 1, CAST('' AS BLOB)), (2, 1, CAST('d/' AS BLOB));
             INSERT INTO files(dir, name, size, mtime_ns, dev, ino, digests, state, present,
                 version, first_seen, last_verified, first_run, last_run, last_verdict)
             VALUES
                 (1, CAST('fresh' AS BLOB), 1, 0, 0, 0, x'00', 'ok', 1, 1, 0, 950, 1, 1, 'ok'),
                 (1, CAST('edge' AS BLOB), 2, 0, 0, 0, x'00', 'ok', 1, 1, 0, 900, 1, 1, 'ok'),
                 (2, CAST('old' AS BLOB), 4, 0, 0, 0, x'00', 'ok', 1, 1, 0, 899, 1, 1, 'ok'),
                 (1, CAST('never' AS BLOB), 8, 0, 0, 0, x'00', 'unreadable', 1, 1, 0, NULL, 1, 1, 'unreadable'),
                 (1, CAST('bad' AS BLOB), 16, 0, 0, 0, x'00', 'corrupt', 1, 1, 0, 10, 1, 1, 'corrupt'),
                 (1, CAST('gone' AS BLOB), 32, 0, 0, 0, x'00', 'missing', 0, 1, 0, 10, 1, 1, 'missing');",
        )
        .unwrap();
    let age = Duration::from_secs(100);
    let mut seen = Vec::new();
    let totals = cat
        .for_each_due(1000, age, &mut |f| {
            seen.push((f.path.clone(), f.last_verified, f.state.clone()))
        })
        .unwrap();
    let p = |s: &str| PathBuf::from(s);
    assert_eq!(
        seen,
        [
            (p("/r/never"), None, "unreadable".to_string()),
            (p("/r/bad"), Some(10), "corrupt".to_string()),
            (p("/r/d/old"), Some(899), "ok".to_string()),
        ]
    );
    assert_eq!(
        totals,
        DueTotals {
            files: 3,
            bytes: 28
        }
    );
    assert_eq!(cat.due_totals(1000, age).unwrap(), totals);
    assert_eq!(
        cat.due_totals(1001, age).unwrap(),
        DueTotals {
            files: 4,
            bytes: 30
        }
    );
}
