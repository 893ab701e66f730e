//! A version's `created`: a W3C date-time, read part by part and held to the calendar.

/// A W3C date-time as inventories write `created`: `YYYY[-MM[-DD]]`, or a whole date then
/// `Thh:mm[:ss[.s+]]` and a zone (`Z` or `+hh:mm`). The parts found, or why it is not one.
/// The form is read by hand (no date library reports which part is missing); the values are
/// held to the calendar by `time`: a day the month has, hours, minutes and offsets in range,
/// and a 60th second only where a leap second can be (the last minute of 30 June or 31
/// December in UTC, which needs the zone).
pub(super) struct Created {
    pub zone: bool,
    pub seconds: bool,
}

/// Why a `created` is not a W3C date-time (each names the text it is about).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotCreated {
    /// Not of the form at all.
    #[error("'{0}' is not a W3C date-time")]
    Form(String),
    /// A day its month does not have.
    #[error("'{0}' names a day its month does not have")]
    NoSuchDay(String),
    /// A time of day after a year or a month alone.
    #[error("'{0}' gives a time without a whole date")]
    TimeWithoutDate(String),
    /// A zone offset past 23:59.
    #[error("'{0}' has a time zone offset out of range")]
    Offset(String),
    /// A 60th second where no leap second can be.
    #[error("'{0}': {1}")]
    LeapSecond(String, &'static str),
}

/// The text being read, and how far.
struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl Cursor<'_> {
    /// `n` digits next, as a number (the cursor past them).
    fn digits(&mut self, n: usize) -> Result<u32, NotCreated> {
        let part = self.s.as_bytes().get(self.i..self.i + n);
        let v = part
            .filter(|p| p.iter().all(u8::is_ascii_digit))
            .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok())
            .ok_or_else(|| self.bad())?;
        self.i += n;
        Ok(v)
    }

    /// Whether `c` is next (the cursor past it if so).
    fn eat(&mut self, c: u8) -> bool {
        let is = self.peek() == Some(c);
        if is {
            self.i += 1;
        }
        is
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn bad(&self) -> NotCreated {
        NotCreated::Form(self.s.to_string())
    }

    /// `YYYY[-MM[-DD]]`: the day, when the date is whole.
    fn date(&mut self) -> Result<Option<time::Date>, NotCreated> {
        let year = self.digits(4)?;
        let mut date = [year, 0, 0];
        for (part, max) in [12, 31].into_iter().enumerate() {
            if !self.eat(b'-') {
                break;
            }
            let v = self.digits(2)?;
            if !(1..=max).contains(&v) {
                return Err(self.bad());
            }
            date[part + 1] = v;
        }
        if date[2] == 0 {
            return Ok(None);
        }
        let month = time::Month::try_from(date[1] as u8).map_err(|_| self.bad())?;
        time::Date::from_calendar_date(year as i32, month, date[2] as u8)
            .map(Some)
            .map_err(|_| NotCreated::NoSuchDay(self.s.to_string()))
    }

    /// `hh:mm[:ss[.s+]]`: hours, minutes and the second, if given.
    fn time(&mut self) -> Result<(u32, u32, Option<u32>), NotCreated> {
        let h = self.digits(2)?;
        if !self.eat(b':') {
            return Err(self.bad());
        }
        let m = self.digits(2)?;
        if h > 23 || m > 59 {
            return Err(self.bad());
        }
        if !self.eat(b':') {
            return Ok((h, m, None));
        }
        let second = self.digits(2)?;
        if second > 60 {
            return Err(self.bad());
        }
        if self.eat(b'.') {
            let start = self.i;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.i += 1;
            }
            if self.i == start {
                return Err(self.bad());
            }
        }
        Ok((h, m, Some(second)))
    }

    /// `Z`, `+hh:mm`, `-hh:mm`, or no zone.
    fn zone(&mut self) -> Result<Option<time::UtcOffset>, NotCreated> {
        if self.eat(b'Z') {
            return Ok(Some(time::UtcOffset::UTC));
        }
        let k = match self.peek() {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return Ok(None),
        };
        self.i += 1;
        let oh = self.digits(2)?;
        if !self.eat(b':') {
            return Err(self.bad());
        }
        let om = self.digits(2)?;
        if oh > 23 || om > 59 {
            return Err(NotCreated::Offset(self.s.to_string()));
        }
        time::UtcOffset::from_hms(k * oh as i8, k * om as i8, 0)
            .map(Some)
            .map_err(|_| self.bad())
    }
}

/// `s` read as a `created`: which parts it gives, or why it is not one.
pub(super) fn parse_created(s: &str) -> Result<Created, NotCreated> {
    let mut c = Cursor { s, i: 0 };
    let day = c.date()?;
    let mut out = Created {
        zone: false,
        seconds: false,
    };
    if c.eat(b'T') {
        let Some(day) = day else {
            return Err(NotCreated::TimeWithoutDate(s.to_string()));
        };
        let (h, m, second) = c.time()?;
        let offset = c.zone()?;
        out.seconds = second.is_some();
        out.zone = offset.is_some();
        if second == Some(60) {
            leap_second(day, h, m, offset).map_err(|why| NotCreated::LeapSecond(s.into(), why))?;
        }
    }
    if c.i != s.len() {
        return Err(c.bad());
    }
    Ok(out)
}

/// Whether `day` at `h:m:60` (local time at `offset`) can be a leap second: 23:59:60 UTC on
/// the last day of June or December.
fn leap_second(
    day: time::Date,
    h: u32,
    m: u32,
    offset: Option<time::UtcOffset>,
) -> Result<(), &'static str> {
    let Some(offset) = offset else {
        return Err("a 60th second without a time zone cannot be a leap second");
    };
    let local = time::Time::from_hms(h as u8, m as u8, 59)
        .map(|t| time::PrimitiveDateTime::new(day, t).assume_offset(offset))
        .map_err(|_| "not a time")?;
    let utc = local.to_offset(time::UtcOffset::UTC);
    let end_of_half = matches!(
        (utc.month(), utc.day()),
        (time::Month::June, 30) | (time::Month::December, 31)
    );
    if (utc.hour(), utc.minute(), utc.second()) == (23, 59, 59) && end_of_half {
        Ok(())
    } else {
        Err(
            "a 60th second only where a leap second can be (23:59:60 UTC on 30 June or 31 December)",
        )
    }
}
