//! The online analysis of `reveal-analyzer run`: what happens to each host's new windows
//! every stride, independent of where the data comes from and where findings go.

pub mod tracker;
