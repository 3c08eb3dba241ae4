package server

const sysMemfdCreate = 319
