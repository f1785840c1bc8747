//! DiskSample → DiskDelta::between → DiskRates. Pure except the collector; never reads /proc
//! itself (that is sys/).
