import { Component } from '@angular/core';
import { bootstrapApplication } from '@angular/platform-browser';
import { provideRouter, RouterLink, RouterOutlet } from '@angular/router';
import { Checkout } from './app/checkout';
import { Home } from './app/home';

@Component({
  selector: 'app-root',
  imports: [RouterLink, RouterOutlet],
  template: `
    <nav>
      <a id="to-home" routerLink="/">Home</a>
      <a id="to-checkout" routerLink="/checkout">Checkout</a>
    </nav>
    <router-outlet />
  `,
})
class App {}

bootstrapApplication(App, {
  providers: [
    provideRouter([
      { path: '', component: Home },
      { path: 'checkout', component: Checkout },
    ]),
  ],
}).catch((err: unknown) => console.error(err));
