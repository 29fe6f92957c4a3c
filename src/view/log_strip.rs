//! What a replica's log strip shows: a window of the partition's offsets as a row of cells, each
//! committed (below the replica's high watermark), appended but not yet committed, missing (the
//! replica does not have it yet), diverged (it holds a record there the leader does not, which
//! it will truncate), deleted (below its log start: retention removed the segment), or cleaned
//! (compaction removed the record and kept its offset), with the high watermark, the log end
//! offset, the leader epochs and the segments' starts marked.
//!
//! The window ends at the leader's log end offset (without a leader, the furthest live replica's),
//! so the live log is what is shown, and a replica ahead of it (a crashed old leader) is marked by
//! how far. Where a replica's log diverges from the leader's, the window is centred on the point
//! where they part.

use bevy::math::{Rect, Vec2};

use super::snapshot::PartitionView;

/// How many offsets before a log's end a strip can show: the snapshot keeps what compaction
/// removed that far back.
pub const STRIP_REACH: u64 = 4_096;

/// The lines above a tall row's log: its name and numbers, and the marks on its log (epochs).
const LINES: f32 = 50.0;
/// The least height of a log in a tall row.
const LOG_MIN: f32 = 18.0;
/// A row at least this tall (times the text size) has its name and numbers on a line of their
/// own, with a line for the marks on its log between them and the log: the lines and the
/// least log fit, so the log never grows up into the text.
pub const TALL: f32 = LINES + LOG_MIN;
/// The width of the mark for a log that runs past the window ("+2250 ->"), at text size 1.
const BEYOND_MARK: f32 = 76.0;

/// Where a replica row draws its strip, and which offsets it shows: tall rows put the name and
/// numbers on a line above the log, short rows put the name beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StripPlace {
    pub rect: Rect,
    pub cell_w: f32,
    /// The offset of the first cell, and how many cells there are.
    pub first: u64,
    pub cells: usize,
    /// Room for a line of names and numbers above the log.
    pub tall: bool,
    /// Room for the numbers on that line.
    pub wide: bool,
}

impl StripPlace {
    /// The strip of a partition's replica in the row `row`, its text `t` times its size; every
    /// replica of the partition shows the same offsets, so their strips line up. A tall row has a
    /// line for its name and numbers, a line for the marks on its log (epochs), then the log.
    pub fn of(row: Rect, p: &PartitionView, t: f32) -> StripPlace {
        let tall = row.height() >= TALL * t;
        let wide = row.width() >= 240.0 * t;
        let rect = if tall {
            let h = (row.height() - LINES * t).clamp(LOG_MIN * t, 84.0 * t);
            let bottom = row.max.y - 5.0 * t;
            Rect::new(row.min.x + 10.0, bottom - h, row.max.x - 6.0, bottom)
        } else {
            let name_w = if wide { 120.0 } else { 90.0 } * t;
            Rect::new(
                row.min.x + 10.0 + name_w,
                row.min.y + 3.0,
                row.max.x - 6.0,
                row.max.y - 3.0,
            )
        };
        // Taller logs have wider cells: fewer offsets, each easier to see from afar.
        let cell_w = if tall {
            (rect.height() * 0.45).clamp(12.0 * t, 20.0 * t)
        } else {
            9.0 * t
        };
        // Centred on a divergence, logs run on past the window's end: room is kept there for
        // the mark that says how far ("+2250 ->").
        let parted = divergence(p);
        let reserve = if parted.is_some() {
            BEYOND_MARK * t
        } else {
            0.0
        };
        let cells = (((rect.width() - reserve) / cell_w).floor() as usize).clamp(1, 64);
        let first = match parted {
            Some((_, at)) => at.saturating_sub(cells as u64 / 2),
            None => anchor(p).saturating_sub(cells as u64),
        };
        StripPlace {
            rect,
            cell_w,
            first,
            cells,
            tall,
            wide,
        }
    }

    /// The rectangle of cell `i`.
    pub fn cell(&self, i: usize) -> Rect {
        let x = self.rect.min.x + i as f32 * self.cell_w;
        Rect::new(x, self.rect.min.y, x + self.cell_w - 2.0, self.rect.max.y)
    }

    /// The cell that shows `offset`, if the window does.
    pub fn cell_of(&self, offset: u64) -> Option<Rect> {
        let i = offset.checked_sub(self.first)? as usize;
        (i < self.cells).then(|| self.cell(i))
    }

    /// Where boundary `i` (0 ..= cells) between cells falls: the high watermark's bar.
    pub fn boundary_x(&self, i: usize) -> f32 {
        self.rect.min.x + i as f32 * self.cell_w - 1.0
    }

    /// The high watermark's bar at boundary `i`: it stands out above and below the cells.
    pub fn watermark_bar(&self, i: usize) -> Rect {
        let x = self.boundary_x(i);
        Rect::new(
            x - 1.5,
            self.rect.min.y - 3.0,
            x + 1.5,
            self.rect.max.y + 3.0,
        )
    }

    /// The centre line of the name and numbers above a tall row's log.
    pub fn text_y(&self, row: Rect, t: f32) -> f32 {
        if self.tall {
            row.min.y + 14.0 * t
        } else {
            row.center().y
        }
    }

    /// The x of the boundary before `offset`, if it is within the window.
    pub fn offset_x(&self, offset: u64) -> Option<f32> {
        let i = offset.checked_sub(self.first)? as usize;
        (i <= self.cells).then(|| self.boundary_x(i))
    }

    /// The offset of the cell under a point, if it is one of the strip's cells.
    pub fn offset_at(&self, at: Vec2) -> Option<u64> {
        if !self.rect.contains(at) {
            return None;
        }
        let i = ((at.x - self.rect.min.x) / self.cell_w).floor() as usize;
        (i < self.cells).then(|| self.first + i as u64)
    }
}

/// Where a partition's strips end: the leader's log end offset; without a leader, the largest
/// among replicas whose brokers run, or among all of them.
pub fn anchor(p: &PartitionView) -> u64 {
    let most = |live: bool| {
        p.replicas
            .iter()
            .filter(|r| r.alive || !live)
            .map(|r| r.log_end_offset)
            .max()
    };
    p.leader_replica()
        .map(|r| r.log_end_offset)
        .or_else(|| most(true))
        .or_else(|| most(false))
        .unwrap_or(0)
}

/// The replica whose log leaves the leader's soonest, and the offset it would truncate to.
pub fn divergence(p: &PartitionView) -> Option<(u32, u64)> {
    p.replicas
        .iter()
        .filter_map(|r| Some((r.broker, r.truncates_to?)))
        .min_by_key(|(_, at)| *at)
}

/// The epochs that start inside a window of `cells` offsets from `first`: (epoch, cell boundary).
pub fn epoch_starts(epochs: &[(u32, u64)], first: u64, cells: usize) -> Vec<(u32, usize)> {
    epochs
        .iter()
        .filter(|(_, start)| *start > first && *start < first + cells as u64)
        .map(|(e, start)| (*e, (start - first) as usize))
        .collect()
}

/// The segments that start inside a window of `cells` offsets from `first`, above the log start:
/// their cell boundaries.
pub fn segment_starts(starts: &[u64], log_start: u64, first: u64, cells: usize) -> Vec<usize> {
    starts
        .iter()
        .filter(|s| **s > first && **s < first + cells as u64 && **s > log_start)
        .map(|s| (s - first) as usize)
        .collect()
}

/// How far a replica's log end is outside the window: ahead of its end (positive) or behind its
/// start (negative); `None` inside it.
pub fn beyond(first: u64, cells: usize, log_end: u64) -> Option<i64> {
    let end = first + cells as u64;
    if log_end > end {
        Some((log_end - end) as i64)
    } else if log_end < first {
        Some(-((first - log_end) as i64))
    } else {
        None
    }
}

/// One cell of a strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Below this replica's high watermark: committed, visible to consumers.
    Committed,
    /// In this replica's log, above its high watermark.
    Uncommitted,
    /// Not in this replica's log (yet): the leader or another replica has it.
    Missing,
    /// In this replica's log past where it leaves the leader's: it will be truncated.
    Diverged,
    /// Below this replica's log start: retention deleted its segment.
    Deleted,
    /// Its place is kept, but this replica's cleaner removed the record: a newer record has its
    /// key, or it was a tombstone past `delete.retention.ms` (compaction).
    Cleaned,
}

/// The strip of one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strip {
    /// The offset of the first cell.
    pub first_offset: u64,
    pub cells: Vec<Cell>,
    /// Where the high watermark and the log end offset fall, as cell boundaries (0 ..= cells),
    /// when they are within the strip.
    pub high_watermark_at: Option<usize>,
    pub log_end_at: Option<usize>,
}

/// A replica's strip in the partition's window; past `truncates_to` its records diverge from the
/// leader's, below `log_start` they were deleted, and in the runs of `cleaned` compaction removed
/// them.
pub fn strip(
    first_offset: u64,
    cells: usize,
    (log_start, log_end): (u64, u64),
    high_watermark: u64,
    truncates_to: Option<u64>,
    cleaned: &[std::ops::Range<u64>],
) -> Strip {
    let cell = |offset: u64| {
        if offset < log_start {
            Cell::Deleted
        } else if cleaned.iter().any(|run| run.contains(&offset)) {
            Cell::Cleaned
        } else if offset >= log_end {
            Cell::Missing
        } else if truncates_to.is_some_and(|at| offset >= at) {
            Cell::Diverged
        } else if offset < high_watermark {
            Cell::Committed
        } else {
            Cell::Uncommitted
        }
    };
    let boundary = |offset: u64| {
        offset
            .checked_sub(first_offset)
            .map(|d| d as usize)
            .filter(|d| *d <= cells)
    };
    Strip {
        first_offset,
        cells: (0..cells as u64).map(|i| cell(first_offset + i)).collect(),
        high_watermark_at: boundary(high_watermark),
        log_end_at: boundary(log_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_behind_its_leader() {
        // The leader has offsets up to 41 (LEO 42), committed up to 39 (HW 40); a follower has
        // up to 40 and knows HW 38.
        let (first, cells) = (32, 10);
        let leader = strip(first, cells, (0, 42), 40, None, &[]);
        assert_eq!(leader.cells[..8], [Cell::Committed; 8]);
        assert_eq!(leader.cells[8..], [Cell::Uncommitted; 2]);
        assert_eq!(
            (leader.high_watermark_at, leader.log_end_at),
            (Some(8), Some(10))
        );
        let follower = strip(first, cells, (0, 41), 38, None, &[]);
        assert_eq!(
            follower.cells[6..],
            [
                Cell::Uncommitted,
                Cell::Uncommitted,
                Cell::Uncommitted,
                Cell::Missing
            ]
        );
        assert_eq!(follower.log_end_at, Some(9));
    }

    #[test]
    fn a_short_log_and_markers_outside_the_window() {
        let s = strip(0, 8, (0, 3), 3, None, &[]);
        assert_eq!(s.cells.iter().filter(|c| **c == Cell::Committed).count(), 3);
        assert_eq!(s.cells.iter().filter(|c| **c == Cell::Missing).count(), 5);
        // A far-behind replica: its markers are left of the window.
        let lagging = strip(100, 10, (0, 50), 40, None, &[]);
        assert_eq!(
            (lagging.high_watermark_at, lagging.log_end_at),
            (None, None)
        );
        assert!(lagging.cells.iter().all(|c| *c == Cell::Missing));
        assert_eq!(beyond(100, 10, 50), Some(-50));
        assert_eq!(beyond(100, 10, 2360), Some(2250));
        assert_eq!(beyond(100, 10, 105), None);
    }

    #[test]
    fn a_diverged_replica_shows_what_it_will_truncate() {
        // After an unclean election at 749 (epoch 1), the old leader holds offsets to 2998 of
        // epoch 0: past 749 they are the records it will cut.
        let old = strip(740, 20, (0, 2999), 2999, Some(749), &[]);
        assert_eq!(old.cells[..9], [Cell::Committed; 9]);
        assert_eq!(old.cells[9..], [Cell::Diverged; 11]);
        let leader = strip(740, 20, (0, 752), 749, None, &[]);
        assert_eq!(leader.cells[9..12], [Cell::Uncommitted; 3]);
        assert_eq!(leader.cells[12..], [Cell::Missing; 8]);
        assert_eq!(epoch_starts(&[(0, 0), (1, 749)], 740, 20), vec![(1, 9)]);
    }

    #[test]
    fn compaction_empties_cells_and_keeps_their_places() {
        let cleaned = [31..33, 40..41];
        let s = strip(30, 12, (0, 42), 42, None, &cleaned);
        let cleaned_at: Vec<usize> = (0..12).filter(|i| s.cells[*i] == Cell::Cleaned).collect();
        assert_eq!(cleaned_at, [1, 2, 10]);
        assert_eq!(s.cells[0], Cell::Committed);
        // Below the log start a cell is deleted, whatever compaction did there before.
        let s = strip(30, 12, (32, 42), 42, None, &cleaned);
        assert_eq!(s.cells[..3], [Cell::Deleted, Cell::Deleted, Cell::Cleaned]);
    }

    #[test]
    fn retention_deleted_the_cells_below_the_log_start() {
        // Segments of ten records from 0; retention moved the log start to 30.
        let s = strip(25, 20, (30, 45), 43, None, &[]);
        assert_eq!(s.cells[..5], [Cell::Deleted; 5]);
        assert_eq!(s.cells[5..18], [Cell::Committed; 13]);
        assert_eq!(s.cells[18..], [Cell::Uncommitted, Cell::Uncommitted]);
        // The starts of the segments kept, inside the window; the log start's own is the edge
        // of the deleted cells.
        assert_eq!(segment_starts(&[30, 40], 30, 25, 20), vec![15]);
    }
}
