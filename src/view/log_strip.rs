//! What a replica's log strip shows: the newest offsets of the partition as a row of cells, each
//! committed (below the replica's high watermark), appended but not yet committed, or missing
//! (the replica does not have it yet), with the high watermark and log end offset marked.

use bevy::math::{Rect, Vec2};

use super::snapshot::PartitionView;

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
    /// The strip of a partition's replica in the row `row`; every replica of the partition shows
    /// the same offsets, so their strips line up.
    pub fn of(row: Rect, p: &PartitionView) -> StripPlace {
        let tall = row.height() >= 34.0;
        let wide = row.width() >= 240.0;
        let rect = if tall {
            let top = row.min.y + row.height() * 0.5;
            Rect::new(row.min.x + 10.0, top, row.max.x - 6.0, row.max.y - 4.0)
        } else {
            let name_w = if wide { 88.0 } else { 64.0 };
            Rect::new(
                row.min.x + 10.0 + name_w,
                row.min.y + 3.0,
                row.max.x - 6.0,
                row.max.y - 3.0,
            )
        };
        let cell_w = if tall { 12.0 } else { 9.0 };
        let cells = ((rect.width() / cell_w).floor() as usize).clamp(1, 64);
        let max_leo = p
            .replicas
            .iter()
            .map(|r| r.log_end_offset)
            .max()
            .unwrap_or(0);
        let (first, cells) = window(max_leo, cells);
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

/// One cell of a strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Below this replica's high watermark: committed, visible to consumers.
    Committed,
    /// In this replica's log, above its high watermark.
    Uncommitted,
    /// Not in this replica's log (yet): the leader or another replica has it.
    Missing,
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

/// The window of offsets every replica of a partition shows: the last `cells` offsets up to the
/// largest log end offset among them, so the replicas' strips line up offset by offset.
pub fn window(max_log_end: u64, cells: usize) -> (u64, usize) {
    let first = max_log_end.saturating_sub(cells as u64);
    (first, cells)
}

/// A replica's strip in the partition's window.
pub fn strip(first_offset: u64, cells: usize, log_end: u64, high_watermark: u64) -> Strip {
    let cell = |offset: u64| {
        if offset < high_watermark {
            Cell::Committed
        } else if offset < log_end {
            Cell::Uncommitted
        } else {
            Cell::Missing
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
        let (first, cells) = window(42, 10);
        assert_eq!(first, 32);
        let leader = strip(first, cells, 42, 40);
        assert_eq!(leader.cells[..8], [Cell::Committed; 8]);
        assert_eq!(leader.cells[8..], [Cell::Uncommitted; 2]);
        assert_eq!(
            (leader.high_watermark_at, leader.log_end_at),
            (Some(8), Some(10))
        );
        let follower = strip(first, cells, 41, 38);
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
        let (first, cells) = window(3, 8);
        assert_eq!(first, 0);
        let s = strip(first, cells, 3, 3);
        assert_eq!(s.cells.iter().filter(|c| **c == Cell::Committed).count(), 3);
        assert_eq!(s.cells.iter().filter(|c| **c == Cell::Missing).count(), 5);
        // A far-behind replica: its markers are left of the window.
        let lagging = strip(100, 10, 50, 40);
        assert_eq!(
            (lagging.high_watermark_at, lagging.log_end_at),
            (None, None)
        );
        assert!(lagging.cells.iter().all(|c| *c == Cell::Missing));
    }
}
