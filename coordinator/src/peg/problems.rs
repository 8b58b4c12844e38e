//! Single-vacancy problems: every start with one hole empty and every finish
//! with one peg left, screened by the position class and then decided.
