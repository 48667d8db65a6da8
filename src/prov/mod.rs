pub mod oxshm;
