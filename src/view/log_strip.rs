//! What a replica's log strip shows: the newest offsets of the partition as a row of cells, each
//! committed (below the replica's high watermark), appended but not yet committed, or missing
//! (the replica does not have it yet), with the high watermark and log end offset marked.

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
