//! Plain text tables and progress bars. Never reads /proc itself.
pub mod table;
